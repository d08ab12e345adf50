"""Null models: next to no compute, so a step costs its parameter traffic (TF paper, sec. 6.1).

Each returns logits that depend on its parameters through one cheap reduction, so the step is
a read of the parameters and a send of their gradient:
  null_scalar  one scalar variable: the floor of a step (its synchronisation, its round trips);
  null_dense   one large dense vector whose gradient is dense: the whole vector moves each step;
  null_sparse  a large embedding table read by `embedding_lookup` of one row per image: its
               gradient is sparse (IndexedSlices), so only the rows a step reads move.
Run them with --weight_decay=0: an L2 term would make every gradient dense and full-size.
"""
import tensorflow.compat.v1 as tf
# PartitionedVariable is not exported by tf.compat.v1.
from tensorflow.python.ops import variables as tf_variables  # pylint: disable=g-direct-tensorflow-import

DENSE_ELEMENTS = 1 << 22           # 16 MiB of float32
SPARSE_ROWS, SPARSE_DIM = 1 << 18, 16  # 16 MiB of float32, 64 bytes per row


def _logits(images, num_classes, value):
    """[batch, num_classes] logits equal to `value` (a scalar tensor) everywhere."""
    return tf.ones([images.shape[0], num_classes]) * value


def scalar(builder, images, num_classes):
    """One scalar parameter."""
    del builder
    weight = tf.get_variable('null/scalar', [], initializer=tf.zeros_initializer())
    return _logits(images, num_classes, weight)


def dense(builder, images, num_classes):
    """One DENSE_ELEMENTS-long parameter vector, read and updated whole every step."""
    del builder
    weights = tf.get_variable('null/dense', [DENSE_ELEMENTS], initializer=tf.zeros_initializer())
    return _logits(images, num_classes, _mean(weights))


def _mean(vector):
    """The mean of a vector, a sliced one's (partitioner, pipelined chunks) summed slice by
    slice: joining the slices, and splitting the gradient back, would copy the whole vector
    twice a step, compute on the cores the transfer shares."""
    if isinstance(vector, tf_variables.PartitionedVariable):
        return tf.add_n([tf.reduce_sum(part) for part in vector]) / DENSE_ELEMENTS
    return tf.reduce_mean(vector)


def sparse(builder, images, num_classes):
    """A SPARSE_ROWS x SPARSE_DIM table; each image looks up one row (chosen by its pixels)."""
    del builder
    table = tf.get_variable('null/embedding', [SPARSE_ROWS, SPARSE_DIM],
                            initializer=tf.zeros_initializer())
    pixels = tf.reshape(images, [images.shape[0], -1])[:, 0]
    ids = tf.math.floormod(tf.cast(tf.abs(pixels) * 1e6, tf.int32), SPARSE_ROWS)
    # 'div': the table may be split into contiguous slices (a fixed-size partitioner).
    rows = tf.nn.embedding_lookup(table, ids, partition_strategy='div')
    return _logits(images, num_classes, tf.reduce_mean(rows))

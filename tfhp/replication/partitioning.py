"""Large variables split over the parameter servers in equal slices (a fixed-size partitioner).

Greedy placement balances whole variables, so one variable larger than the rest together (VGG's
first fully connected layer holds 74% of the model) leaves one ps carrying most of the traffic.
Split along its first axis into one slice per ps, each slice is a variable of its own that the
greedy placer spreads, and each step's reads and updates of it are spread with it. An embedding
looked up from a split variable gets a sparse (IndexedSlices) gradient per slice.

A chunked ps transfer cuts large variables into chunks of its own size (`chunk_rows`, made by
`sliced_variable`), as TensorFlow's partitioners cut them.
"""
import contextlib

import tensorflow.compat.v1 as tf
# PartitionedVariable and the initializers' partition info are not exported by tf.compat.v1.
from tensorflow.python.ops import variable_scope  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.ops import variables as tf_variables  # pylint: disable=g-direct-tensorflow-import
from tensorflow.python.util import tf_inspect  # pylint: disable=g-direct-tensorflow-import

from tfhp.replication import base


def split_large_variables(num_shards, min_bytes):
    """A custom getter giving variables of >= min_bytes a fixed-size partitioner (num_shards
    slices along axis 0); smaller variables are created whole, under their own names."""
    partitioner = tf.fixed_size_partitioner(num_shards)

    def getter(getter, name, shape=None, dtype=tf.float32, **kwargs):
        shape = tf.TensorShape(shape)
        if shape.ndims and shape.num_elements() * tf.as_dtype(dtype).size >= min_bytes:
            kwargs['partitioner'] = partitioner
        return getter(name, shape=shape, dtype=dtype, **kwargs)
    return getter


def chunk_rows(num_rows, row_bytes, max_bytes):
    """The rows of each chunk of a variable of num_rows rows (of row_bytes each) cut along
    axis 0 into as few chunks of at most max_bytes as can be (a chunked transfer's), at least a
    row each, equal but for one row (as TensorFlow's partitioners cut)."""
    max_rows = max(1, max_bytes // row_bytes)
    count = -(-num_rows // max_rows)
    return [num_rows // count + (i < num_rows % count) for i in range(count)]


def chunks_of(max_bytes):
    """slicing(shape, dtype): the rows of each chunk (`chunk_rows`) of a variable of more than
    max_bytes, None for one sent whole (a `MasterCopies` slicing)."""
    def slicing(shape, dtype):
        shape = tf.TensorShape(shape)
        if not shape.ndims or not shape.is_fully_defined():
            return None
        num_rows = shape.as_list()[0]
        row_bytes = shape[1:].num_elements() * tf.as_dtype(dtype).size
        if not row_bytes or num_rows * row_bytes <= max_bytes:
            return None
        return chunk_rows(num_rows, row_bytes, max_bytes)
    return slicing


def sliced_variable(getter, name, rows, shape, dtype=tf.float32, initializer=None, **kwargs):
    """A PartitionedVariable of `shape` that `getter` makes as slices along axis 0 of `rows`
    rows each, named name/part_<i> as TensorFlow's partitioners name them: each is initialised
    as its slice of the whole (the initializer told the full shape, as a partitioner's is) and
    saved as that slice of one variable `name`, so checkpoints hold the variable whole.

    Unlike a partitioner's, the slices' rows are given, so a transfer's chunk size sets them.

    Raises:
      ValueError: the initializer is a value, not a function (naming the variable).
    """
    shape = tf.TensorShape(shape).as_list()
    kwargs.pop('partitioner', None)
    if initializer is None:  # get_variable's own default for floating variables
        initializer = tf.glorot_uniform_initializer()
    if not callable(initializer):
        raise ValueError('variable %s: cut into slices, it needs an initializer function, not '
                         'a value' % name)
    parts, offset = [], 0
    for index, num_rows in enumerate(rows):
        part_shape = [num_rows] + shape[1:]
        var_offset = [offset] + [0] * (len(shape) - 1)
        part = getter('%s/part_%d' % (name, index), shape=part_shape, dtype=dtype,
                      initializer=_slice_initializer(initializer, shape, var_offset), **kwargs)
        part._set_save_slice_info(  # pylint: disable=protected-access
            tf_variables.Variable.SaveSliceInfo(name, shape, var_offset, part_shape))
        parts.append(part)
        offset += num_rows
    return tf_variables.PartitionedVariable(name, shape, dtype, parts,
                                            [len(parts)] + [1] * (len(shape) - 1))


def _slice_initializer(initializer, full_shape, var_offset):
    """initializer, called for one slice as get_variable calls it for a partitioner's: told the
    whole variable's shape where it takes partition_info (fan-in scaling reads it)."""
    info = variable_scope._PartitionInfo(full_shape, var_offset)  # pylint: disable=protected-access
    takes_info = 'partition_info' in tf_inspect.getfullargspec(initializer).args

    def init(shape, dtype=None, partition_info=None):
        del partition_info
        if takes_info:
            return initializer(shape, dtype=dtype, partition_info=info)
        return initializer(shape, dtype=dtype)
    return init


class Partitioned(base.PlacementDelegate):
    """A placement manager whose large variables are split (placement only: no apply).

    Args:
      placement: the manager placing variables (a `ParameterServer`).
      num_shards: slices per large variable (the number of ps tasks).
      min_bytes: variables of at least this many bytes are split.
    """

    def __init__(self, placement, num_shards, min_bytes):
        super().__init__(placement)
        self._getter = split_large_variables(num_shards, min_bytes)

    @contextlib.contextmanager
    def tower_scope(self, tower):
        with self._placement.tower_scope(tower), tf.variable_scope(
                tf.get_variable_scope(), custom_getter=self._getter):
            yield

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        raise NotImplementedError('Partitioned places variables only; wrap it in AsyncReplicas '
                                  'or SyncReplicas')

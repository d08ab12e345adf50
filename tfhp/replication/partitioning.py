"""Large variables split over the parameter servers in equal slices (a fixed-size partitioner).

Greedy placement balances whole variables, so one variable larger than the rest together (VGG's
first fully connected layer holds 74% of the model) leaves one ps carrying most of the traffic.
Split along its first axis into one slice per ps, each slice is a variable of its own that the
greedy placer spreads, and each step's reads and updates of it are spread with it. An embedding
looked up from a split variable gets a sparse (IndexedSlices) gradient per slice.
"""
import contextlib

import tensorflow.compat.v1 as tf

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


def chunk_large_variables(max_bytes):
    """A custom getter cutting trainable variables of more than max_bytes along axis 0 into
    slices of at most max_bytes (a pipelined transfer's chunks); others are created whole."""
    partitioner = tf.variable_axis_size_partitioner(max_bytes)

    def getter(getter, name, shape=None, dtype=tf.float32, **kwargs):
        shape = tf.TensorShape(shape)
        if (kwargs.get('trainable') is not False and shape.ndims and
                shape.num_elements() * tf.as_dtype(dtype).size > max_bytes):
            kwargs['partitioner'] = partitioner
        return getter(name, shape=shape, dtype=dtype, **kwargs)
    return getter


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

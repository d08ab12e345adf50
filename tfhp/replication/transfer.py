"""Gradients sent between tasks in a narrower dtype: cast on the sender, back where applied.

Between graphs, a worker's gradient crosses the network to the ps task that holds its variable
(or, all-reduced, to the other workers). Sent as float16 or bfloat16 it is half the bytes; the
receiver casts it back to the variable's dtype before applying it, so the optimizer, its slots
and the accumulators stay float32. Only what the worker sends is narrowed: the variables it
reads from the ps each step still come in their own dtype.
"""
import tensorflow.compat.v1 as tf

from tfhp.replication import base


def _cast(grad, dtype):
    return base.map_values(grad, lambda values: tf.cast(values, dtype))


def narrow(grad, dtype):
    """`grad` (dense or IndexedSlices) cast to `dtype` for sending, in the caller's device
    scope (the sender's); None, non-float gradients and dtype None pass unchanged."""
    if grad is None or dtype is None or not grad.dtype.is_floating:
        return grad
    return _cast(grad, tf.as_dtype(dtype))


def widen(grad, var):
    """`grad` cast back to var's dtype on var's device (the receiver's); unchanged if equal."""
    if grad is None or grad.dtype == var.dtype.base_dtype:
        return grad
    with tf.device(var.device):
        return _cast(grad, var.dtype.base_dtype)

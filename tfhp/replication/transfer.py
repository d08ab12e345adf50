"""Gradients sent compressed: compressed on the sender, back where they are applied.

A worker's gradient crosses the network to the ps task that holds its variable (between
graphs), or a tower's crosses to the parameter device (in one graph). A `tfhp.compression`
scheme turns it into a smaller payload on the sender (`narrow`: a 16-bit cast is half the
bytes, packed signs 1/32); the receiver decompresses it to the variable's dtype before using it
(`widen`), so the optimizer, its slots and the accumulators stay float32. Only what is sent is
compressed: the variables read from the ps each step still come in their own dtype.

A summable payload (a cast) is one tensor, and stays sparse for a sparse gradient. Any other
(sign, top-k, random-k) is a tuple of tensors describing the dense gradient, so a sparse
gradient is made dense first; the ps decompresses each sender's payload before it aggregates.
A scheme with error feedback keeps its residual on the sender, one per `narrow` call.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.replication import base


def narrow(grad, compressor):
    """`grad` (dense or IndexedSlices) compressed for sending, in the caller's device scope
    (the sender's); None, non-float gradients and compressor None pass unchanged."""
    if grad is None or compressor is None or not grad.dtype.is_floating:
        return grad
    if not compressor.summable:
        return compressor.send(tf.convert_to_tensor(grad))
    return base.map_values(grad, compressor.send)


def widen(grad, var, compressor):
    """`grad` decompressed to var's dtype on var's device (the receiver's); a gradient that
    was not compressed (compressor None, or not a float) passes unchanged."""
    if grad is None or compressor is None:
        return grad
    dtype = var.dtype.base_dtype
    if isinstance(grad, tuple):  # a payload that cannot be summed
        with tf.device(var.device):
            return compressor.decompress(grad, dtype, var.shape)
    if not grad.dtype.is_floating:
        return grad
    with tf.device(var.device):
        return base.map_values(
            grad, lambda payload: compressor.decompress(payload, dtype, payload.shape))


def mean_over_towers(tower_grads, device, compressor=None):
    """This worker's gradient per variable: the mean over its towers, computed on `device`.

    Args:
      tower_grads: tower_grads[t][v] = (gradient, variable); variables are tower 0's.
      device: the worker's CPU.
      compressor: send the means compressed (`narrow`); None: as they are.
    Returns:
      [(mean gradient, tower 0's variable)] in variable order; None gradients stay None.
    """
    result = []
    with tf.name_scope(scopes.AGGREGATE), tf.device(device):
        for per_var in zip(*tower_grads):
            grads = [g for g, _ in per_var]
            mean = None if grads[0] is None else base.mean_gradient(grads)
            result.append((narrow(mean, compressor), per_var[0][1]))
    return result

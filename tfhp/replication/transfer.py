"""Gradients sent between tasks compressed: compressed on the sender, back where applied.

Between graphs, a worker's gradient crosses the network to the ps task that holds its variable
(or, all-reduced, to the other workers). A `tfhp.compression` scheme turns it into a smaller
payload there (a 16-bit cast is half the bytes); the receiver decompresses it to the variable's
dtype before applying it, so the optimizer, its slots and the accumulators stay float32. Only
what the worker sends is compressed: the variables it reads from the ps each step still come in
their own dtype. The ps's accumulators add payloads, so a scheme sent this way is `summable`.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.replication import base


def narrow(grad, compressor):
    """`grad` (dense or IndexedSlices) compressed for sending, in the caller's device scope
    (the sender's); None, non-float gradients and compressor None pass unchanged."""
    if grad is None or compressor is None or not grad.dtype.is_floating:
        return grad
    return base.map_values(grad, compressor.compress)


def widen(grad, var, compressor):
    """`grad` decompressed to var's dtype on var's device (the receiver's); a gradient that
    was not compressed (compressor None, or not a float) passes unchanged."""
    if grad is None or compressor is None or not grad.dtype.is_floating:
        return grad
    dtype = var.dtype.base_dtype
    with tf.device(var.device):
        return base.map_values(grad, lambda payload: compressor.decompress(payload, dtype))


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

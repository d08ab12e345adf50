"""Sparse payloads: k of a gradient's n elements, sent as (values, int32 indices).

k = ceil(fraction * n), at least 1; the payload is k values in the gradient's dtype and k int32
indices into the flattened gradient, so a float32 gradient costs 2 * fraction of its bytes (and
at most 8 bytes more for the rounding up). The receiver scatters the values into zeros. A
subclass says which k elements go (`topk`: the largest magnitudes; `randomk`: a uniform draw).
"""
import abc
import math

import tensorflow.compat.v1 as tf

from tfhp.compression import base

INDEX_DTYPE = tf.int32


def num_kept(n, fraction):
    """How many of n elements a payload keeps: ceil(fraction * n), at least 1."""
    return max(1, min(n, int(math.ceil(fraction * n))))


class Sparse(base.Compressor):
    """Sends k = ceil(fraction * n) elements of each gradient; which ones is `_select`'s choice.

    Args:
      fraction: the share of elements sent, in (0, 1].
      error_feedback: keep a residual per gradient (what was not sent goes out later).
    """
    summable = False
    masks_momentum = True

    def __init__(self, fraction, error_feedback):
        if not 0 < fraction <= 1:
            raise ValueError('the fraction of elements sent must be in (0, 1], got %r'
                             % fraction)
        self.fraction = fraction
        self.error_feedback = error_feedback
        # 4-byte values and 4-byte indices per kept element, over 4 bytes per element.
        self.wire_ratio = 2.0 * fraction

    @abc.abstractmethod
    def _select(self, flat, k):
        """The int32 indices of the k elements of 1-D `flat` to send, distinct."""

    def compress(self, tensor):
        flat = tf.reshape(tensor, [-1])
        indices = self._select(flat, num_kept(flat.shape.num_elements(), self.fraction))
        return tf.gather(flat, indices), indices

    def decompress(self, payload, dtype, shape):
        values, indices = payload
        dense = tf.scatter_nd(indices[:, None], tf.cast(values, dtype),
                              [shape.num_elements()])
        return tf.reshape(dense, shape)

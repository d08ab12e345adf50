"""1-bit compression: each element's sign, scaled by the mean absolute value (EF-SignSGD).

The payload of a gradient p of n elements is (bits, scale): the signs packed 8 to a byte
(uint8, ceil(n / 8) bytes; an element >= 0 is a 1 bit) and scale = mean(|p|), one float. It
stands for scale * sign(p): the same l1 norm as p, so the step keeps p's size (Karimireddy et
al. 2019, "Error Feedback Fixes SignSGD and other Gradient Compression Schemes"). That is 1/32
of a float32 gradient, plus 4 bytes.

Signs alone are biased: small components are sent as large as big ones, and a component whose
sign flips from tower to tower is sent at full size each time. With error feedback
(`Sign()`, scheme 'sign') the residual carries what each payload over- or under-shot into the
next step; without it (`Sign(error_feedback=False)`, 'sign_noef') the bias stays, which is
what the pair is for: showing what the feedback buys.
"""
import tensorflow.compat.v1 as tf

from tfhp.compression import base

_BITS_PER_BYTE = 8


def _shifts():
    return tf.constant(list(range(_BITS_PER_BYTE)), tf.uint8)


def pack(bits):
    """1-D uint8 `bits` (0 or 1) of static length n -> ceil(n / 8) bytes: bit j of byte i is
    element 8 i + j (zero-padded at the end)."""
    padding = -bits.shape.num_elements() % _BITS_PER_BYTE
    rows = tf.reshape(tf.pad(bits, [[0, padding]]), [-1, _BITS_PER_BYTE])
    # The shifted bits are disjoint, so their sum is their bitwise or.
    return tf.reduce_sum(tf.bitwise.left_shift(rows, _shifts()), axis=1)


def unpack(packed, n):
    """The first `n` bits of `pack`'s bytes, as 1-D uint8 zeros and ones."""
    bits = tf.bitwise.bitwise_and(tf.bitwise.right_shift(packed[:, None], _shifts()), 1)
    return tf.reshape(bits, [-1])[:n]


class Sign(base.Compressor):
    """Packed signs and the mean absolute value.

    Args:
      error_feedback: keep a residual per gradient ('sign'); False: plain scaled signs
        ('sign_noef').
    """
    summable = False
    wire_ratio = 1.0 / 32

    def __init__(self, error_feedback=True):
        self.error_feedback = error_feedback
        self.name = 'sign' if error_feedback else 'sign_noef'

    def compress(self, tensor):
        flat = tf.reshape(tensor, [-1])
        return pack(tf.cast(flat >= 0, tf.uint8)), tf.reduce_mean(tf.abs(flat))

    def decompress(self, payload, dtype, shape):
        bits, scale = payload
        signs = tf.cast(unpack(bits, shape.num_elements()), dtype) * 2 - 1
        return tf.reshape(signs * tf.cast(scale, dtype), shape)

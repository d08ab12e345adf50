"""A new gradient compression scheme: float16 with a fixed scale. Gradients are multiplied by
2**k before the cast and divided after it, so small gradients that plain float16 would flush
to zero (below 6e-8) or round coarsely (below 6e-5, subnormal) keep their digits.

Scaling commutes with the sum, so the payload is summable: every all-reduce and the ps's
accumulators carry it as they carry float16. The recipe is in docs/extending.md.

  python examples/extending/scaled_float16.py
"""
import numpy as np
import tensorflow.compat.v1 as tf

from tfhp import compression
from tfhp.compression import base


class ScaledFloat16(base.Compressor):
    """float16 on the wire, scaled by 2**log2_scale (a power of two: the scaling is exact)."""
    name = 'scaled_float16'
    summable = True
    wire_ratio = 0.5

    def __init__(self, log2_scale=16):
        self._scale = float(2 ** log2_scale)

    def compress(self, tensor):
        return tf.cast(tensor * self._scale, tf.float16)

    def decompress(self, payload, dtype, shape):
        del shape  # a cast keeps it
        return tf.cast(payload, dtype) / self._scale


compression.register('scaled_float16', ScaledFloat16)


def main():
    """Round-trips gradients of 1e-8..1e-4 through float16 and scaled_float16; returns the
    largest relative error of each."""
    grads = np.logspace(-8, -4, 9).astype(np.float32)
    errors = {}
    with tf.Graph().as_default(), tf.Session() as sess:
        for name in ('float16', 'scaled_float16'):
            compressor = compression.get(name)
            tensor = tf.constant(grads)
            back = sess.run(compressor.decompress(compressor.compress(tensor), tf.float32,
                                                  tensor.shape))
            errors[name] = float(np.max(np.abs(back - grads) / grads))
    print('largest relative error on 1e-8..1e-4: %s' % ', '.join(
        '%s %.2g' % item for item in errors.items()))
    return errors


if __name__ == '__main__':
    main()

"""16-bit transfer: the gradient cast to float16 or bfloat16 on the wire, cast back where used.

Half the bytes; the optimizer, its slots and the accumulators stay float32 because the
receiver casts back before applying. A cast commutes with the sum up to rounding, so the
payload is summable: the all-reduce adds float16 tensors (float16 keeps ~3 significant digits,
bfloat16 ~2).
"""
import tensorflow.compat.v1 as tf

from tfhp.compression import base


class Cast(base.Compressor):
    """Sends a floating tensor in a narrower float dtype.

    Args:
      dtype: 'float16' or 'bfloat16' (also the scheme's name).
    """
    summable = True
    wire_ratio = 0.5

    def __init__(self, dtype):
        self.name = dtype
        self._dtype = tf.as_dtype(dtype)

    def compress(self, tensor):
        return tf.cast(tensor, self._dtype)

    def decompress(self, payload, dtype, shape):
        del shape  # a cast keeps it
        return tf.cast(payload, dtype)

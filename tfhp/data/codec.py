"""JPEG (and PNG) encoding and decoding outside the training graph, for the data-set writers and
checker.

One small graph and session serve every caller; `session.run` releases the GIL, so writer
threads encode in parallel.
"""
import numpy as np
import tensorflow.compat.v1 as tf


class ImageDecodeError(ValueError):
    """Bytes that TensorFlow cannot decode as an image."""


class JpegCodec:
    """Encodes uint8 RGB arrays to JPEG (or PNG) and decodes JPEG/PNG/GIF/BMP bytes to arrays.

    Args:
      quality: JPEG quality of `encode`, 0-100.
    """

    def __init__(self, quality=90):
        self._graph = tf.Graph()
        with self._graph.as_default():
            self._pixels = tf.placeholder(tf.uint8, [None, None, 3])
            self._size = tf.placeholder(tf.int32, [2])
            resized = tf.cast(tf.round(tf.clip_by_value(tf.image.resize_images(
                self._pixels, self._size, method=tf.image.ResizeMethod.BILINEAR), 0, 255)),
                              tf.uint8)
            self._encoded = tf.image.encode_jpeg(self._pixels, quality=quality)
            self._resized_encoded = tf.image.encode_jpeg(resized, quality=quality)
            self._png = tf.io.encode_png(self._pixels)
            self._bytes = tf.placeholder(tf.string, [])
            self._decoded = tf.io.decode_image(self._bytes, channels=3, expand_animations=False)
        self._session = tf.Session(graph=self._graph)

    def encode(self, pixels, size=None):
        """JPEG bytes of a uint8 [height, width, 3] array, bilinearly resized to `size` first
        when it is given as (height, width)."""
        if size is None:
            return self._session.run(self._encoded, {self._pixels: pixels})
        return self._session.run(self._resized_encoded, {self._pixels: pixels,
                                                         self._size: size})

    def encode_png(self, pixels):
        """PNG bytes (lossless) of a uint8 [height, width, 3] array."""
        return self._session.run(self._png, {self._pixels: pixels})

    def decode(self, data):
        """The uint8 [height, width, 3] array of image bytes; ImageDecodeError if invalid."""
        try:
            return self._session.run(self._decoded, {self._bytes: data})
        except tf.errors.InvalidArgumentError as e:
            raise ImageDecodeError(e.message.splitlines()[0]) from None

    def close(self):
        self._session.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def is_jpeg(data):
    """Whether `data` starts with the JPEG start-of-image marker."""
    return data[:3] == b'\xff\xd8\xff'


def is_png(data):
    """Whether `data` starts with the PNG signature."""
    return data[:8] == b'\x89PNG\r\n\x1a\n'


def to_rgb(gray):
    """A uint8 [h, w, 3] array from a 2-D grey image."""
    return np.repeat(np.asarray(gray, np.uint8)[:, :, None], 3, axis=2)

"""Tiny data sets in temp directories for the pipeline tests (a few dozen 16x16 images)."""
import numpy as np
import tensorflow.compat.v1 as tf

from tfhp.data import codec as codec_lib
from tfhp.data import synthetic
from tfhp.pipelines import example_format

NUM_CLASSES = 4
PER_CLASS = 6  # per class and subset: 24 training and 24 validation images


def make_shapes(directory):
    """A learnable synthetic data set of 4 classes x 6 images per subset, 16x16, 3 shards."""
    return synthetic.generate(directory, num_classes=NUM_CLASSES, image_size=16,
                              train_examples=NUM_CLASSES * PER_CLASS,
                              validation_examples=NUM_CLASSES * PER_CLASS, train_shards=3,
                              validation_shards=2, seed=5)


def make_corrupt(directory, subset='validation'):
    """One shard of 8 good images (labels 0..3 twice) with 3 corrupt records among them.

    Returns:
      The shard's glob pattern; records 2, 5 and 8 are corrupt (not an Example, not a JPEG,
      label 9 out of range [0, 4)).
    """
    rng = np.random.default_rng(0)
    with codec_lib.JpegCodec() as codec:
        good = [example_format.make_example(
            codec.encode(rng.integers(0, 255, [16, 16, 3], dtype=np.uint8)), k % 4, 16,
            16).SerializeToString() for k in range(8)]
        bad_label = example_format.make_example(codec.encode(np.zeros([16, 16, 3], np.uint8)),
                                                9, 16, 16).SerializeToString()
    not_jpeg = example_format.make_example(b'plain text', 1, 16, 16).SerializeToString()
    records = good[:2] + [b'\x01 not an Example'] + good[2:4] + [not_jpeg] + good[4:6] + [
        bad_label] + good[6:]
    path = '%s/%s-00000-of-00001' % (directory, subset)
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)
    return example_format.shard_pattern(directory, subset)

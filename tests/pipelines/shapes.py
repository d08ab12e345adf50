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


def good_records(count):
    """`count` serialized Examples of random 16x16 JPEGs, labelled 0, 1, 2, 3, 0, ..."""
    rng = np.random.default_rng(0)
    with codec_lib.JpegCodec() as codec:
        return [example_format.make_example(
            codec.encode(rng.integers(0, 255, [16, 16, 3], dtype=np.uint8)), k % 4, 16,
            16).SerializeToString() for k in range(count)]


def _write(path, records):
    with tf.io.TFRecordWriter(path) as writer:
        for record in records:
            writer.write(record)


def make_cut_short(directory, cut, subset='train'):
    """Shards whose last record is cut short, as an interrupted copy leaves them.

    Args:
      directory: where to write.
      cut: 'data': one shard of 5 good records (labels 0..3, 0), the 5th cut 10 bytes short,
        inside its data; 'header': the same shard cut 5 bytes into the 5th record's 12-byte
        header; 'partial': a shard of 4 good records (labels 0..3) and a second one holding
        only the first 40 bytes of a record.
      subset: 'train' or 'validation'.
    Returns:
      The shards' glob pattern.
    """
    records = good_records(5)
    if cut == 'partial':
        _write('%s/%s-00000-of-00002' % (directory, subset), records[:4])
        path = '%s/%s-00001-of-00002' % (directory, subset)
        _write(path, records[4:])
        keep = 40
    else:
        path = '%s/%s-00000-of-00001' % (directory, subset)
        _write(path, records)
        size = tf.io.gfile.stat(path).length
        # The 5th record starts 16 bytes of framing + its length before the end.
        keep = size - 10 if cut == 'data' else size - len(records[4]) - 16 + 5
    with open(path, 'rb') as f:
        data = f.read()
    with open(path, 'wb') as f:
        f.write(data[:keep])
    return example_format.shard_pattern(directory, subset)


def make_corrupt(directory, subset='validation'):
    """One shard of 8 good images (labels 0..3 twice) with 3 corrupt records among them.

    Returns:
      The shard's glob pattern; records 2, 5 and 8 are corrupt (not an Example, not a JPEG,
      label 9 out of range [0, 4)).
    """
    good = good_records(8)
    with codec_lib.JpegCodec() as codec:
        bad_label = example_format.make_example(codec.encode(np.zeros([16, 16, 3], np.uint8)),
                                                9, 16, 16).SerializeToString()
    not_jpeg = example_format.make_example(b'plain text', 1, 16, 16).SerializeToString()
    records = good[:2] + [b'\x01 not an Example'] + good[2:4] + [not_jpeg] + good[4:6] + [
        bad_label] + good[6:]
    _write('%s/%s-00000-of-00001' % (directory, subset), records)
    return example_format.shard_pattern(directory, subset)

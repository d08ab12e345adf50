"""Converts a folder of JPEG/PNG images, one sub-folder per class, to TFRecord shards.

Classes are the sub-folders' names in sorted order (label 0 is the first). JPEG files are
stored as they are; other formats are decoded and re-encoded as JPEG, since the training
preprocessing decodes JPEG only. Every image is decoded once, so a file that is not an image
is reported by name before anything is written. The validation subset is a second folder of
the same layout, or else a seeded `validation_fraction` of each class.
"""
import os

import numpy as np

from tfhp.data import codec as codec_lib
from tfhp.data import info as info_lib
from tfhp.data import writer
from tfhp.pipelines import example_format

EXTENSIONS = ('.jpg', '.jpeg', '.png')


def list_images(root):
    """(sorted class names, [(path, label)]) of a folder with one sub-folder per class.

    Raises:
      ValueError: `root` is missing or has no class folder holding an image.
    """
    if not os.path.isdir(root):
        raise ValueError('image folder %s does not exist' % root)
    classes = sorted(d for d in os.listdir(root) if os.path.isdir(os.path.join(root, d)))
    images = [(os.path.join(root, c, f), label)
              for label, c in enumerate(classes)
              for f in sorted(os.listdir(os.path.join(root, c)))
              if f.lower().endswith(EXTENSIONS)]
    if not images:
        raise ValueError('%s has no class sub-folder holding %s files' % (root,
                                                                         '/'.join(EXTENSIONS)))
    return classes, images


def _split(images, fraction, rng):
    """Moves a `fraction` of each class (at least none, at most all but one) to validation."""
    train, validation = [], []
    labels = np.array([label for _, label in images])
    for label in np.unique(labels):
        members = [images[i] for i in rng.permutation(np.flatnonzero(labels == label))]
        count = min(int(round(fraction * len(members))), len(members) - 1)
        validation.extend(members[:count])
        train.extend(members[count:])
    return train, validation


def convert(input_dir, output_dir, validation_dir=None, validation_fraction=0.1,
            train_shards=8, validation_shards=2, num_threads=2, seed=0, name=None):
    """Writes train and validation shards and the data set's info.

    Args:
      input_dir: folder with one sub-folder of images per class.
      output_dir: where the shards and dataset_info.json go.
      validation_dir: a folder of the same classes for validation; None splits input_dir.
      validation_fraction: share of each class kept for validation when splitting.
      train_shards, validation_shards: files per subset.
      num_threads: shards written at once.
      seed: seed of the split and of the order of the examples.
      name: the data set's name (default: input_dir's base name).
    Returns:
      The DataSetInfo written.
    Raises:
      ValueError: a missing or empty folder, mismatched classes, or a file that is not an
        image (named).
    """
    classes, images = list_images(input_dir)
    rng = np.random.default_rng(seed)
    if validation_dir is None:
        subsets = dict(zip(info_lib.SUBSETS, _split(images, validation_fraction, rng)))
    else:
        validation_classes, validation = list_images(validation_dir)
        if validation_classes != classes:
            raise ValueError('%s and %s have different class folders'
                             % (input_dir, validation_dir))
        subsets = {'train': images, 'validation': validation}
    shards = {'train': train_shards, 'validation': validation_shards}
    with codec_lib.JpegCodec() as codec:

        def make_example(item):
            path, label = item
            with open(path, 'rb') as f:
                data = f.read()
            try:
                pixels = codec.decode(data)
            except codec_lib.ImageDecodeError as e:
                raise ValueError('%s: not an image (%s)' % (path, e)) from None
            if not codec_lib.is_jpeg(data):
                data = codec.encode(pixels)
            return example_format.make_example(
                data, label, pixels.shape[0], pixels.shape[1], text=classes[label].encode(),
                filename=os.path.relpath(path, os.path.dirname(input_dir)).encode())

        for subset, items in subsets.items():
            items = [items[i] for i in rng.permutation(len(items))]
            writer.write_subset(output_dir, subset, items, make_example, shards[subset],
                                num_threads)
    info = info_lib.DataSetInfo(
        name or os.path.basename(os.path.normpath(input_dir)), len(classes),
        {s: len(items) for s, items in subsets.items()}, class_names=tuple(classes))
    info_lib.write(output_dir, info)
    return info

"""Converts CIFAR-10 (Krizhevsky 2009) to TFRecord shards in tfhp's Example format.

Reads either distribution of the data set, from `input_dir` or its usual sub-folder:
  python  cifar-10-batches-py/{data_batch_1..5, test_batch}: pickled dicts whose b'data' is
          uint8 [N, 3072] (1024 red, then green, then blue values, rows top to bottom) and
          b'labels' a list of N labels;
  binary  cifar-10-batches-bin/{data_batch_1..5, test_batch}.bin: records of 1 label byte and
          the same 3072 pixel bytes.
The five data batches become the `train` subset (50,000 images), the test batch `validation`
(10,000), in the batches' order (they are already shuffled). Labels stay 0..9 and the data set
has 10 classes: CIFAR has no background class, unlike ImageNet's 1..1000.

Images are stored as PNG: lossless, so the records hold exactly the data set's pixels (the
round-trip test checks it). JPEG would change them, and at 32x32 its chroma subsampling and
8x8 blocks are a large part of the image. The training preprocessing for CIFAR-10 decodes
either format.
"""
import os
import pickle

import numpy as np

from tfhp.data import codec as codec_lib
from tfhp.data import info as info_lib
from tfhp.data import writer
from tfhp.pipelines import example_format

IMAGE_SIZE = 32
PIXELS = 3 * IMAGE_SIZE * IMAGE_SIZE
TRAIN_BATCHES = tuple('data_batch_%d' % i for i in range(1, 6))
TEST_BATCH = 'test_batch'
SUB_FOLDERS = ('', 'cifar-10-batches-py', 'cifar-10-batches-bin')


class _ArrayUnpickler(pickle.Unpickler):
    """Unpickles dicts, lists, bytes and numpy arrays only.

    Unpickling calls whatever a file names; the batches need nothing but numpy's array
    reconstruction (and `_codecs.encode`, which protocol-2 pickles written by Python 3 use for
    bytes), so anything else is refused rather than run.
    """
    ALLOWED = {('numpy.core.multiarray', '_reconstruct'),
               ('numpy._core.multiarray', '_reconstruct'), ('numpy', 'ndarray'),
               ('numpy', 'dtype'), ('_codecs', 'encode')}

    def find_class(self, module, name):
        if (module, name) not in self.ALLOWED:
            raise pickle.UnpicklingError('a CIFAR batch holds no %s.%s' % (module, name))
        return super().find_class(module, name)


def to_images(rows):
    """uint8 [N, 3072] rows (planar RGB, as the batches store them) -> [N, 32, 32, 3]."""
    return rows.reshape(-1, 3, IMAGE_SIZE, IMAGE_SIZE).transpose(0, 2, 3, 1)


def read_python_batch(path):
    """(uint8 images [N, 32, 32, 3], int labels [N]) of one pickled batch."""
    with open(path, 'rb') as f:
        try:
            batch = _ArrayUnpickler(f, encoding='bytes').load()
        except (pickle.UnpicklingError, EOFError) as e:
            raise ValueError('%s: not a CIFAR-10 python batch (%s)' % (path, e)) from None
    try:
        rows = np.asarray(batch[b'data'], np.uint8)
        labels = np.asarray(batch[b'labels'], np.int64)
    except (KeyError, TypeError):
        raise ValueError('%s: not a CIFAR-10 batch (no b\'data\' and b\'labels\')'
                         % path) from None
    if rows.ndim != 2 or rows.shape[1] != PIXELS or len(labels) != len(rows):
        raise ValueError('%s: data of shape %s with %d labels; expected [N, %d] and N labels'
                         % (path, rows.shape, len(labels), PIXELS))
    return to_images(rows), labels


def read_binary_batch(path):
    """(uint8 images [N, 32, 32, 3], int labels [N]) of one binary batch."""
    data = np.fromfile(path, np.uint8)
    if data.size == 0 or data.size % (PIXELS + 1):
        raise ValueError('%s: %d bytes is not a whole number of %d-byte CIFAR-10 records'
                         % (path, data.size, PIXELS + 1))
    records = data.reshape(-1, PIXELS + 1)
    return to_images(records[:, 1:]), records[:, 0].astype(np.int64)


def find_batches(input_dir):
    """The batch files of input_dir, as {'train': [paths], 'validation': [path]} and a reader.

    Looks in input_dir and its usual sub-folders, for the python batches first.
    Raises:
      ValueError: none of the places holds all six batches of either distribution.
    """
    for sub in SUB_FOLDERS:
        directory = os.path.join(input_dir, sub)
        for suffix, reader in (('', read_python_batch), ('.bin', read_binary_batch)):
            names = {'train': [n + suffix for n in TRAIN_BATCHES],
                     'validation': [TEST_BATCH + suffix]}
            paths = {s: [os.path.join(directory, n) for n in ns] for s, ns in names.items()}
            if all(os.path.isfile(p) for ps in paths.values() for p in ps):
                return paths, reader
    raise ValueError('%s holds no CIFAR-10 batches: expected %s and %s (python) or the same '
                     'names with .bin (binary), there or in %s'
                     % (input_dir, ', '.join(TRAIN_BATCHES), TEST_BATCH,
                        ' or '.join(SUB_FOLDERS[1:])))


def convert(input_dir, output_dir, train_shards=10, validation_shards=2, num_threads=2):
    """Writes CIFAR-10's train and validation shards and its dataset_info.json.

    Args:
      input_dir: a directory holding the python or binary batches (see the module docstring).
      output_dir: where the shards and dataset_info.json go.
      train_shards, validation_shards: files per subset.
      num_threads: shards written at once.
    Returns:
      The DataSetInfo written: name 'cifar10', 10 classes, 32x32 PNG images.
    Raises:
      ValueError: the batches are missing or malformed, or a label is not in 0..9.
    """
    paths, reader = find_batches(input_dir)
    shards = {'train': train_shards, 'validation': validation_shards}
    counts = {}
    with codec_lib.JpegCodec() as codec:
        for subset, files in paths.items():
            items = []
            for path in files:
                images, labels = reader(path)
                bad = labels[(labels < 0) | (labels >= len(info_lib.CIFAR10_CLASSES))]
                if bad.size:
                    raise ValueError('%s: label %d is not a CIFAR-10 class (0..9)'
                                     % (path, bad[0]))
                name = os.path.basename(path)
                items.extend((images[i], int(labels[i]), '%s:%d' % (name, i))
                             for i in range(len(labels)))

            def make_example(item):
                pixels, label, source = item
                return example_format.make_example(
                    codec.encode_png(pixels), label, IMAGE_SIZE, IMAGE_SIZE,
                    text=info_lib.CIFAR10_CLASSES[label].encode(), filename=source.encode(),
                    image_format=b'PNG')

            writer.write_subset(output_dir, subset, items, make_example, shards[subset],
                                num_threads)
            counts[subset] = len(items)
    info = info_lib.DataSetInfo(info_lib.CIFAR10.name, info_lib.CIFAR10.num_classes, counts,
                                IMAGE_SIZE, info_lib.CIFAR10_CLASSES, 'PNG')
    info_lib.write(output_dir, info)
    return info

"""A small generated stand-in for CIFAR-10's distributions, for the converter and pipeline tests.

Both layouts of the real download, with a few random images per batch: the python batches
(pickled dicts of b'data' uint8 [N, 3072] in planar RGB and b'labels') and the binary ones
(records of a label byte and the 3072 pixel bytes).
"""
import os
import pickle

import numpy as np

from tfhp.data import cifar10

PER_BATCH = 4  # images per batch file: 20 training and 4 validation images


def batches(seed=0):
    """{batch name: (uint8 rows [PER_BATCH, 3072], labels [PER_BATCH])}, every class used."""
    rng = np.random.default_rng(seed)
    names = cifar10.TRAIN_BATCHES + (cifar10.TEST_BATCH,)
    labels = np.arange(len(names) * PER_BATCH) % 10
    return {name: (rng.integers(0, 256, [PER_BATCH, cifar10.PIXELS], dtype=np.uint8),
                   labels[i * PER_BATCH:(i + 1) * PER_BATCH])
            for i, name in enumerate(names)}


def write_python(directory, seed=0):
    """Writes the python batches into `directory`; returns `batches(seed)`."""
    os.makedirs(directory, exist_ok=True)
    data = batches(seed)
    for name, (rows, labels) in data.items():
        with open(os.path.join(directory, name), 'wb') as f:
            # Protocol 2 with bytes keys, as the real (Python 2) pickles are.
            pickle.dump({b'batch_label': name.encode(), b'data': rows,
                         b'labels': [int(k) for k in labels]}, f, protocol=2)
    return data


def write_binary(directory, seed=0):
    """Writes the binary .bin batches into `directory`; returns `batches(seed)`."""
    os.makedirs(directory, exist_ok=True)
    data = batches(seed)
    for name, (rows, labels) in data.items():
        records = np.concatenate([labels.astype(np.uint8)[:, None], rows], axis=1)
        records.tofile(os.path.join(directory, name + '.bin'))
    return data

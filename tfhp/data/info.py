"""What a data directory holds: its name, classes, examples per subset and image format.

tfhp's writers put a `dataset_info.json` beside the shards. A directory without one is taken
to be ImageNet as the usual conversion scripts write it: labels 1..1000 with 0 reserved for
"background", hence 1001 classes, and ImageNet's subset sizes. CIFAR-10 (`tfhp.data.cifar10`)
keeps its own labels 0..9: 10 classes, no background.

Without a data directory, synthetic data stands in for one of the STAND_INS (ImageNet by
default; `--data_name=cifar10` for CIFAR-10's 32x32 images and 10 classes).
"""
import dataclasses
import json
import os
from typing import Dict, Optional, Tuple

INFO_FILE = 'dataset_info.json'
SUBSETS = ('train', 'validation')


class DataSetError(ValueError):
    """A data directory that cannot be used as asked; the message names it."""


@dataclasses.dataclass(frozen=True)
class DataSetInfo:
    """A data set's description.

    Attributes:
      name: e.g. 'imagenet', 'synthetic', 'digits'.
      num_classes: labels lie in [0, num_classes).
      num_examples: examples per subset, e.g. {'train': 1281167, 'validation': 50000}.
      image_size: the stored images' size when they all have one, else None.
      class_names: the name of each label, when known.
      image_format: how `image/encoded` is encoded: 'JPEG' or 'PNG'.
    """
    name: str
    num_classes: int
    num_examples: Dict[str, int]
    image_size: Optional[int] = None
    class_names: Tuple[str, ...] = ()
    image_format: str = 'JPEG'


IMAGENET = DataSetInfo('imagenet', 1001, {'train': 1281167, 'validation': 50000})
# Label k is CIFAR10_CLASSES[k], the order of the data set's batches.meta.
CIFAR10_CLASSES = ('airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse',
                   'ship', 'truck')
CIFAR10 = DataSetInfo('cifar10', 10, {'train': 50000, 'validation': 10000}, 32, CIFAR10_CLASSES,
                      'PNG')
# The data sets synthetic data can stand in for, by name.
STAND_INS = {IMAGENET.name: IMAGENET, CIFAR10.name: CIFAR10}


def write(directory, info):
    """Writes `info` as directory/dataset_info.json."""
    with open(os.path.join(directory, INFO_FILE), 'w') as f:
        json.dump(dataclasses.asdict(info), f, indent=1, sort_keys=True)


def load(data_dir, data_name=None):
    """Reads a data directory's description.

    Args:
      data_dir: the directory of the shards.
      data_name: the data set's expected name; None accepts whatever the directory holds.
    Returns:
      A DataSetInfo: the directory's info file, or ImageNet's when there is none.
    Raises:
      DataSetError: the directory is missing, its info file is unreadable, or its name is not
        `data_name`.
    """
    if not os.path.isdir(data_dir):
        raise DataSetError('directory %s does not exist' % data_dir)
    path = os.path.join(data_dir, INFO_FILE)
    if not os.path.exists(path):
        if data_name not in (None, IMAGENET.name):
            raise DataSetError('%s has no %s; only ImageNet needs none, and this is --data_name='
                               '%s' % (data_dir, INFO_FILE, data_name))
        return IMAGENET
    try:
        with open(path) as f:
            fields = json.load(f)
        fields['class_names'] = tuple(fields.get('class_names', ()))
        info = DataSetInfo(**fields)
    except (ValueError, TypeError) as e:
        raise DataSetError('%s: not a tfhp data set description (%s)' % (path, e)) from None
    if data_name is not None and data_name != info.name:
        raise DataSetError('%s holds data set %r, not %r' % (data_dir, info.name, data_name))
    return info

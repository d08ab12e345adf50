"""Maps model names to their builders and their defaults (image size, batch size, learning rate).

A model module exposes `build(builder, images, num_classes) -> logits`: `builder` is the
`layers.LayerBuilder` (its data format, training mode and batch-norm kind), `images` a 4-D batch
in the builder's data format, and the logits have shape [batch, num_classes]. The defaults are
those of the reference CNN benchmarks, so a command line that names only `--model` gets the
usual setting.

Models come in two families, by the data they are made for: ImageNet-sized nets and CIFAR-10
nets (32x32). As in the reference benchmarks, the data set picks the family and the name on the
command line stays the same: `alexnet` and `trivial` are one net for CIFAR-10 data and another
for any other data, and the CIFAR-only nets (`resnet20`, `densenet40_k12`, ...) need CIFAR-10
data (or `--data_name=cifar10` for its synthetic stand-in).
"""
import collections
import functools

from tfhp.models import alexnet
from tfhp.models import densenet
from tfhp.models import googlenet
from tfhp.models import inception
from tfhp.models import inception_v4
from tfhp.models import lenet
from tfhp.models import mobilenet
from tfhp.models import null
from tfhp.models import overfeat
from tfhp.models import resnet
from tfhp.models import resnet_cifar
from tfhp.models import trivial
from tfhp.models import vgg

# The model families, named by the data set they are made for.
IMAGENET = 'imagenet'
CIFAR10 = 'cifar10'
FAMILIES = (IMAGENET, CIFAR10)

ModelSpec = collections.namedtuple('ModelSpec', [
    'name',           # registry key
    'build',          # build(builder, images, num_classes) -> logits
    'image_size',     # default square input size in pixels
    'batch_size',     # default per-tower batch size
    'learning_rate',  # default base learning rate (for batch_size per tower)
    'family',         # IMAGENET or CIFAR10: the data the net is made for
])

_SPECS = {}  # (family, name) -> ModelSpec


def family_of(data_name):
    """The model family for a data set: CIFAR10 for 'cifar10', IMAGENET for any other (None
    included: synthetic data stands in for ImageNet unless told otherwise)."""
    return CIFAR10 if data_name == CIFAR10 else IMAGENET


def register(name, build, image_size, batch_size, learning_rate, family=IMAGENET):
    """Adds a model to the registry, in `family` (IMAGENET or CIFAR10)."""
    if family not in FAMILIES:
        raise ValueError('family must be one of %s, got %r' % (FAMILIES, family))
    _SPECS[family, name] = ModelSpec(name, build, image_size, batch_size, learning_rate,
                                     family)


def get(name, data_name=None):
    """Returns the ModelSpec of `name` for data set `data_name` (see `family_of`).

    Raises:
      ValueError: no such model for that data set; the message lists the known ones and says
        which data set the name belongs to when it is another's.
    """
    wanted = family_of(data_name)
    try:
        return _SPECS[wanted, name]
    except KeyError:
        pass
    others = [f for f in FAMILIES if (f, name) in _SPECS]
    if others:
        raise ValueError('model %r is for %s data, not %s' % (name, others[0], wanted))
    raise ValueError('unknown model %r for %s data; known models: %s'
                     % (name, wanted, ', '.join(names(data_name))))


def names(data_name=None):
    """Sorted names of the models registered for data set `data_name` (see `family_of`)."""
    wanted = family_of(data_name)
    return sorted(name for f, name in _SPECS if f == wanted)


# Image sizes, per-tower batch sizes and learning rates of the reference CNN benchmarks.
# ImageNet-sized nets.
register('trivial', trivial.build, 224, 32, 0.005)
register('lenet', lenet.build, 28, 32, 0.005)
register('alexnet', alexnet.build, 224, 512, 0.005)
register('overfeat', overfeat.build, 231, 32, 0.005)
register('googlenet', googlenet.build, 224, 32, 0.005)
register('inception3', inception.build, 299, 32, 0.005)
register('inception4', inception_v4.build, 299, 32, 0.005)
register('mobilenet', mobilenet.build, 224, 32, 0.005)
for _depth in (11, 16, 19):
    register('vgg%d' % _depth, functools.partial(vgg.build, depth=_depth), 224, 64, 0.005)
# Parameter-traffic probes for distributed runs (tfhp.models.null); tiny images, no compute.
register('null_scalar', null.scalar, 8, 1, 0.005)
register('null_dense', null.dense, 8, 1, 0.005)
register('null_sparse', null.sparse, 8, 1, 0.005)


# The reference benchmarks give ImageNet ResNets a base rate of 0.128 per 256 images (the paper
# starts at 0.1 for 256) and scale it linearly with the batch (--resnet_base_lr changes it).
RESNET_BASE_RATE = 0.128
RESNET_BASE_BATCH = 256


def resnet_learning_rate(batch_size, base_rate=RESNET_BASE_RATE):
    """An ImageNet ResNet's default rate for `batch_size` images per device."""
    return base_rate * batch_size / RESNET_BASE_BATCH


def has_resnet_rate(spec):
    """Whether `spec` is an ImageNet ResNet, whose default rate scales with the batch."""
    return spec.family == IMAGENET and spec.name.startswith('resnet')


for _depth, _batch_size in ((50, 64), (101, 32), (152, 32)):
    for _version, _suffix in (('v1', ''), ('v1.5', '_v1.5'), ('v2', '_v2')):
        register('resnet%d%s' % (_depth, _suffix),
                 functools.partial(resnet.build, depth=_depth, version=_version),
                 224, _batch_size, resnet_learning_rate(_batch_size))

# CIFAR-10 nets, at 32x32. The reference benchmarks train them with piecewise-constant rates
# that start at these.
register('trivial', trivial.build, 32, 32, 0.005, CIFAR10)
register('alexnet', alexnet.build_cifar, 32, 128, 0.1, CIFAR10)
for _depth in resnet_cifar.DEPTHS:
    for _version, _suffix in (('v1', ''), ('v2', '_v2')):
        register('resnet%d%s' % (_depth, _suffix),
                 functools.partial(resnet_cifar.build, depth=_depth, version=_version),
                 32, 128, 0.1, CIFAR10)
for _depth, _growth_rate in ((40, 12), (100, 12), (100, 24)):
    register('densenet%d_k%d' % (_depth, _growth_rate),
             functools.partial(densenet.build, depth=_depth, growth_rate=_growth_rate),
             32, 64, 0.1, CIFAR10)

"""Maps model names to their builders and their defaults (image size, batch size, learning rate).

A model module exposes `build(builder, images, num_classes) -> logits`: `builder` is the
`layers.LayerBuilder` (its data format, training mode and batch-norm kind), `images` a 4-D batch
in the builder's data format, and the logits have shape [batch, num_classes]. The defaults are those of the reference CNN benchmarks, so a command line
that names only `--model` gets the usual setting.
"""
import collections
import functools

from tfhp.models import alexnet
from tfhp.models import googlenet
from tfhp.models import inception
from tfhp.models import lenet
from tfhp.models import null
from tfhp.models import overfeat
from tfhp.models import resnet
from tfhp.models import trivial
from tfhp.models import vgg

ModelSpec = collections.namedtuple('ModelSpec', [
    'name',           # registry key
    'build',          # build(builder, images, num_classes) -> logits
    'image_size',     # default square input size in pixels
    'batch_size',     # default per-tower batch size
    'learning_rate',  # default base learning rate (for batch_size per tower)
])

_SPECS = {}


def register(name, build, image_size, batch_size, learning_rate):
    """Adds a model to the registry."""
    _SPECS[name] = ModelSpec(name, build, image_size, batch_size, learning_rate)


def get(name):
    """Returns the ModelSpec named `name`; ValueError naming the known models otherwise."""
    try:
        return _SPECS[name]
    except KeyError:
        raise ValueError('unknown model %r; known models: %s'
                         % (name, ', '.join(sorted(_SPECS)))) from None


def names():
    """Sorted names of every registered model."""
    return sorted(_SPECS)


# Image sizes, per-tower batch sizes and learning rates of the reference CNN benchmarks.
register('trivial', trivial.build, 224, 32, 0.005)
register('lenet', lenet.build, 28, 32, 0.005)
register('alexnet', alexnet.build, 224, 512, 0.005)
register('overfeat', overfeat.build, 231, 32, 0.005)
register('googlenet', googlenet.build, 224, 32, 0.005)
register('inception3', inception.build, 299, 32, 0.005)
for _depth in (11, 16, 19):
    register('vgg%d' % _depth, functools.partial(vgg.build, depth=_depth), 224, 64, 0.005)
# Parameter-traffic probes for distributed runs (tfhp.models.null); tiny images, no compute.
register('null_scalar', null.scalar, 8, 1, 0.005)
register('null_dense', null.dense, 8, 1, 0.005)
register('null_sparse', null.sparse, 8, 1, 0.005)


def _resnet_learning_rate(batch_size):
    # The reference benchmarks give ResNets a base rate of 0.128 per 256 images (the paper
    # starts at 0.1 for 256) and scale it linearly with the batch.
    return 0.128 * batch_size / 256


for _depth, _batch_size in ((50, 64), (101, 32), (152, 32)):
    for _version, _suffix in (('v1', ''), ('v1.5', '_v1.5')):
        register('resnet%d%s' % (_depth, _suffix),
                 functools.partial(resnet.build, depth=_depth, version=_version),
                 224, _batch_size, _resnet_learning_rate(_batch_size))

"""GoogLeNet (Inception v1): Szegedy et al., "Going Deeper with Convolutions", 2014.

As in the paper (Table 1) without the auxiliary heads and without LRN: convolutions with biases
and no batch norm, real 5x5 convolutions in the third branch, 40% dropout before the logits.
"""
import tensorflow.compat.v1 as tf

from tfhp.models import common

# Inception modules by name, as (1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj) filters;
# None marks the 3x3/2 max pools between the three groups.
_MODULES = [
    ('3a', (64, 96, 128, 16, 32, 32)),
    ('3b', (128, 128, 192, 32, 96, 64)),
    None,
    ('4a', (192, 96, 208, 16, 48, 64)),
    ('4b', (160, 112, 224, 24, 64, 64)),
    ('4c', (128, 128, 256, 24, 64, 64)),
    ('4d', (112, 144, 288, 32, 64, 64)),
    ('4e', (256, 160, 320, 32, 128, 128)),
    None,
    ('5a', (256, 160, 320, 32, 128, 128)),
    ('5b', (384, 192, 384, 48, 128, 128)),
]


def inception_module(builder, x, filters):
    """The four-branch Inception module (1x1, 3x3, 5x5 and pooling branches, concatenated).

    Args:
      builder: the LayerBuilder.
      x: the input feature map.
      filters: (1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj) filter counts.
    Returns:
      The concatenated branches.
    """
    f1, f3r, f3, f5r, f5, fpool = filters
    conv = builder.conv
    return builder.concat([
        conv(x, f1, 1),
        common.chain(conv, x, [(f3r, 1), (f3, 3)]),
        common.chain(conv, x, [(f5r, 1), (f5, 5)]),
        conv(builder.max_pool(x, 3, 1, 'SAME'), fpool, 1),
    ])


def build(builder, images, num_classes):
    """Returns GoogLeNet logits (224x224 by default; any size of at least 32 builds).


    The model interface (arguments, logits shape) is documented in registry.py.
    """
    x = builder.conv(images, 64, 7, strides=2)
    x = builder.max_pool(x, 3, 2, 'SAME')
    x = builder.conv(x, 64, 1)
    x = builder.conv(x, 192, 3)
    x = builder.max_pool(x, 3, 2, 'SAME')
    for module in _MODULES:
        if module is None:
            x = builder.max_pool(x, 3, 2, 'SAME')
            continue
        name, filters = module
        with tf.variable_scope('inception_' + name):
            x = inception_module(builder, x, filters)
    # Global average pooling is the paper's 7x7 average pool at 224 and lets small inputs build.
    return common.classifier(builder, builder.global_avg_pool(x), num_classes, keep_prob=0.6)

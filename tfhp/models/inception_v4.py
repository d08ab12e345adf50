"""Inception v4: Szegedy et al., "Inception-v4, Inception-ResNet and the Impact of Residual
Connections on Learning", 2016.

The pure Inception net of the paper's Figures 3-9: the stem (Figure 3), four Inception-A blocks
on the 35x35 grid (Figure 4), Reduction-A with k, l, m, n = 192, 224, 256, 384 (Figure 7),
seven Inception-B blocks on 17x17 (Figure 5), Reduction-B (Figure 8), three Inception-C blocks
on 8x8 (Figure 6), then average pooling, dropout keeping 80% and the classifier. Every
convolution is followed by batch norm (no bias); no auxiliary head.
"""
import functools

import tensorflow.compat.v1 as tf

from tfhp.models import common

_VALID = {'padding': 'VALID'}
_VALID_2 = {'strides': 2, 'padding': 'VALID'}


def _stem(conv, builder, x):
    # 299 -> 35x35x384: three convolutions, then three two-branch splits, each concatenated.
    x = common.chain(conv, x, [(32, 3, _VALID_2), (32, 3, _VALID), (64, 3)])
    x = builder.concat([builder.max_pool(x, 3, 2), conv(x, 96, 3, **_VALID_2)])
    x = builder.concat([
        common.chain(conv, x, [(64, 1), (96, 3, _VALID)]),
        common.chain(conv, x, [(64, 1), (64, (7, 1)), (64, (1, 7)), (96, 3, _VALID)]),
    ])
    return builder.concat([conv(x, 192, 3, **_VALID_2), builder.max_pool(x, 3, 2)])


def _pool_branch(conv, builder, x, filters):
    return conv(builder.avg_pool(x, 3, 1, 'SAME'), filters, 1)


def _block_a(conv, builder, x):
    return builder.concat([
        _pool_branch(conv, builder, x, 96),
        conv(x, 96, 1),
        common.chain(conv, x, [(64, 1), (96, 3)]),
        common.chain(conv, x, [(64, 1), (96, 3), (96, 3)]),
    ])


def _reduction_a(conv, builder, x):
    return builder.concat([
        builder.max_pool(x, 3, 2),
        conv(x, 384, 3, **_VALID_2),
        common.chain(conv, x, [(192, 1), (224, 3), (256, 3, _VALID_2)]),
    ])


def _block_b(conv, builder, x):
    # 7x7 convolutions factorised into 1x7 and 7x1, once and twice.
    return builder.concat([
        _pool_branch(conv, builder, x, 128),
        conv(x, 384, 1),
        common.chain(conv, x, [(192, 1), (224, (1, 7)), (256, (7, 1))]),
        common.chain(conv, x, [(192, 1), (192, (1, 7)), (224, (7, 1)), (224, (1, 7)),
                               (256, (7, 1))]),
    ])


def _reduction_b(conv, builder, x):
    return builder.concat([
        builder.max_pool(x, 3, 2),
        common.chain(conv, x, [(192, 1), (192, 3, _VALID_2)]),
        common.chain(conv, x, [(256, 1), (256, (1, 7)), (320, (7, 1)), (320, 3, _VALID_2)]),
    ])


def _split(conv, builder, x):
    # One input to parallel 1x3 and 3x1 convolutions of 256 filters, concatenated.
    return builder.concat([conv(x, 256, (1, 3)), conv(x, 256, (3, 1))])


def _block_c(conv, builder, x):
    return builder.concat([
        _pool_branch(conv, builder, x, 256),
        conv(x, 256, 1),
        _split(conv, builder, conv(x, 384, 1)),
        _split(conv, builder, common.chain(conv, x, [(384, 1), (448, (1, 3)), (512, (3, 1))])),
    ])


def build(builder, images, num_classes):
    """Returns Inception v4 logits (299x299 by default; any size of at least 75 builds).


    The model interface (arguments, logits shape) is documented in registry.py.
    """
    conv = functools.partial(builder.conv, batch_norm=True)
    with tf.variable_scope('stem'):
        x = _stem(conv, builder, images)
    blocks = ([('a%d' % i, _block_a) for i in range(4)] + [('reduction_a', _reduction_a)] +
              [('b%d' % i, _block_b) for i in range(7)] + [('reduction_b', _reduction_b)] +
              [('c%d' % i, _block_c) for i in range(3)])
    for name, block in blocks:
        with tf.variable_scope(name):
            x = block(conv, builder, x)
    with tf.variable_scope('head'):
        return common.classifier(builder, builder.global_avg_pool(x), num_classes,
                                 keep_prob=0.8)

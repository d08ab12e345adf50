"""Inception v3: Szegedy et al., "Rethinking the Inception Architecture for Computer Vision",
2015.

Every convolution is followed by batch norm (no bias). The module names follow the paper's
figures: 5b-5d are the 35x35 blocks (Figure 5), 6a and 7a the grid reductions (Figure 10),
6b-6e the 17x17 blocks with factorised 7x7 convolutions (Figure 6) and 7b-7c the 8x8 blocks
with expanded filter banks (Figure 7).
"""
import functools

import tensorflow.compat.v1 as tf

from tfhp.models import common

_VALID_2 = {'strides': 2, 'padding': 'VALID'}


def _stem(conv, builder, x):
    # 299 -> 35: three 3x3 convolutions, pool, 1x1 and 3x3 convolutions, pool.
    x = common.chain(conv, x, [(32, 3, _VALID_2), (32, 3, {'padding': 'VALID'}), (64, 3)])
    x = builder.max_pool(x, 3, 2)
    x = common.chain(conv, x, [(80, 1, {'padding': 'VALID'}), (192, 3, {'padding': 'VALID'})])
    return builder.max_pool(x, 3, 2)


def _pool_branch(conv, builder, x, filters):
    return conv(builder.avg_pool(x, 3, 1, 'SAME'), filters, 1)


def _block_35(conv, builder, x, pool_filters):
    return builder.concat([
        conv(x, 64, 1),
        common.chain(conv, x, [(48, 1), (64, 5)]),
        common.chain(conv, x, [(64, 1), (96, 3), (96, 3)]),
        _pool_branch(conv, builder, x, pool_filters),
    ])


def _reduce_35(conv, builder, x):
    return builder.concat([
        conv(x, 384, 3, **_VALID_2),
        common.chain(conv, x, [(64, 1), (96, 3), (96, 3, _VALID_2)]),
        builder.max_pool(x, 3, 2),
    ])


def _block_17(conv, builder, x, width):
    # A 7x7 convolution factorised into 1x7 and 7x1, once and twice; `width` grows by block.
    return builder.concat([
        conv(x, 192, 1),
        common.chain(conv, x, [(width, 1), (width, (1, 7)), (192, (7, 1))]),
        common.chain(conv, x, [(width, 1), (width, (7, 1)), (width, (1, 7)), (width, (7, 1)),
                               (192, (1, 7))]),
        _pool_branch(conv, builder, x, 192),
    ])


def _reduce_17(conv, builder, x):
    return builder.concat([
        common.chain(conv, x, [(192, 1), (320, 3, _VALID_2)]),
        common.chain(conv, x, [(192, 1), (192, (1, 7)), (192, (7, 1)), (192, 3, _VALID_2)]),
        builder.max_pool(x, 3, 2),
    ])


def _expanded(conv, builder, x):
    # Splits a 3x3 into parallel 1x3 and 3x1 convolutions whose outputs are concatenated.
    return builder.concat([conv(x, 384, (1, 3)), conv(x, 384, (3, 1))])


def _block_8(conv, builder, x):
    return builder.concat([
        conv(x, 320, 1),
        _expanded(conv, builder, conv(x, 384, 1)),
        _expanded(conv, builder, common.chain(conv, x, [(448, 1), (384, 3)])),
        _pool_branch(conv, builder, x, 192),
    ])


def _aux_head(conv, builder, x, num_classes):
    # On the 17x17 grid: 5x5/3 average pool to 5x5, 1x1 conv, 5x5 conv to 1x1, logits.
    x = builder.avg_pool(x, 5, 3)
    x = common.chain(conv, x, [(128, 1), (768, 5, {'padding': 'VALID', 'stddev': 0.01})])
    return builder.dense(builder.flatten(x), num_classes, activation=None, stddev=0.001)


def build(builder, images, num_classes, aux_logits=False):
    """Returns Inception v3 logits (299x299 by default; any size of at least 75 builds).

    Args:
      builder: the LayerBuilder.
      images: 4-D images in the builder's data format.
      num_classes: number of classes.
      aux_logits: also build the auxiliary head on the 17x17 grid (needs 299x299 inputs).
    Returns:
      Logits of shape [batch, num_classes], or (logits, aux_logits) when `aux_logits`.
    """
    conv = functools.partial(builder.conv, batch_norm=True)
    with tf.variable_scope('stem'):
        x = _stem(conv, builder, images)
    blocks = [
        ('mixed_5b', functools.partial(_block_35, pool_filters=32)),
        ('mixed_5c', functools.partial(_block_35, pool_filters=64)),
        ('mixed_5d', functools.partial(_block_35, pool_filters=64)),
        ('mixed_6a', _reduce_35),
        ('mixed_6b', functools.partial(_block_17, width=128)),
        ('mixed_6c', functools.partial(_block_17, width=160)),
        ('mixed_6d', functools.partial(_block_17, width=160)),
        ('mixed_6e', functools.partial(_block_17, width=192)),
        ('mixed_7a', _reduce_17),
        ('mixed_7b', _block_8),
        ('mixed_7c', _block_8),
    ]
    aux = None
    for name, block in blocks:
        with tf.variable_scope(name):
            x = block(conv, builder, x)
        if name == 'mixed_6e' and aux_logits:
            with tf.variable_scope('aux'):
                aux = _aux_head(conv, builder, x, num_classes)
    with tf.variable_scope('head'):
        logits = common.classifier(builder, builder.global_avg_pool(x), num_classes,
                                   keep_prob=0.8)
    return (logits, aux) if aux_logits else logits

"""MobileNet v1 (width 1.0): Howard et al., "MobileNets: Efficient Convolutional Neural Networks
for Mobile Vision Applications", 2017.

A strided 3x3 convolution, then 13 depthwise-separable layers (a 3x3 depthwise convolution and
a 1x1 pointwise convolution, each with batch norm and ReLU6), global average pooling and the
classifier (Table 1 of the paper). ReLU6 rather than the paper's ReLU, as in the released TF
implementation, which bounds activations for low-precision inference; the cost is the same.

The reference benchmarks' `mobilenet` is MobileNet v2 (a TF1-only slim model); this is v1.
"""
import functools

import tensorflow.compat.v1 as tf

from tfhp.models import common

# (stride of the depthwise convolution, filters of the pointwise one) per separable layer.
_SEPARABLE_LAYERS = ((1, 64), (2, 128), (1, 128), (2, 256), (1, 256), (2, 512),
                     (1, 512), (1, 512), (1, 512), (1, 512), (1, 512), (2, 1024), (1, 1024))


def build(builder, images, num_classes):
    """Returns MobileNet logits (224x224 by default; any size of at least 32 builds).


    The model interface (arguments, logits shape) is documented in registry.py.
    """
    conv = functools.partial(builder.conv, batch_norm=True, activation=tf.nn.relu6)
    x = conv(images, 32, 3, strides=2)
    for index, (stride, filters) in enumerate(_SEPARABLE_LAYERS):
        with tf.variable_scope('separable%d' % index):
            x = builder.depthwise_conv(x, 3, strides=stride, batch_norm=True,
                                       activation=tf.nn.relu6)
            x = conv(x, filters, 1)
    # The released model keeps 99.9% in a dropout before the logits: in effect none.
    return common.classifier(builder, builder.global_avg_pool(x), num_classes)

"""DenseNet for CIFAR-10: Huang et al., "Densely Connected Convolutional Networks", 2017.

The basic nets of the paper's Table 2 (no bottleneck, no compression): a 3x3 convolution of 16
filters, three dense blocks of (depth - 4) / 3 layers on 32x32, 16x16 and 8x8 maps, each layer
BN-ReLU-conv3x3 producing `growth_rate` channels that are concatenated to its input, and between
the blocks a transition of BN-ReLU-conv1x1 (keeping the width) and 2x2 average pooling; then
BN-ReLU, global average pooling and the classifier.

Convolutions have no bias: each is followed, through the concatenation, by a batch norm. (The
reference benchmarks give them biases and put a ReLU after the transition's convolution; the
paper has neither.)
"""
import tensorflow.compat.v1 as tf

from tfhp.models import common


def dense_block(builder, x, num_layers, growth_rate):
    """`num_layers` BN-ReLU-conv3x3 layers, each concatenating its output to its input."""
    for layer in range(num_layers):
        with tf.variable_scope('layer%d' % layer):
            y = builder.batch_norm_relu(x)
            y = builder.conv(y, growth_rate, 3, activation=None, use_bias=False)
        x = builder.concat([x, y])
    return x


def transition(builder, x):
    """BN-ReLU-conv1x1 of the same width, then 2x2 average pooling."""
    y = builder.batch_norm_relu(x)
    y = builder.conv(y, builder.channels(x), 1, activation=None, use_bias=False)
    return builder.avg_pool(y, 2)


def build(builder, images, num_classes, depth=40, growth_rate=12):
    """Returns DenseNet logits (32x32 by default; any size divisible by 4 builds).

    Args:
      builder: the LayerBuilder.
      images: 4-D images in the builder's data format.
      num_classes: number of classes.
      depth: total layers, 3n + 4 (40 or 100 in the paper's Table 2).
      growth_rate: channels each layer adds (k: 12 or 24).
    Returns:
      Logits of shape [batch, num_classes].
    Raises:
      ValueError: depth is not 3n + 4.
    """
    if depth < 7 or (depth - 4) % 3:
        raise ValueError('depth must be 3n + 4 with n >= 1, got %d' % depth)
    layers_per_block = (depth - 4) // 3
    x = builder.conv(images, 16, 3, activation=None, use_bias=False)
    for block in range(3):
        with tf.variable_scope('block%d' % (block + 1)):
            x = dense_block(builder, x, layers_per_block, growth_rate)
        if block < 2:
            with tf.variable_scope('transition%d' % (block + 1)):
                x = transition(builder, x)
    x = builder.batch_norm_relu(x, name='postnorm')
    return common.classifier(builder, builder.global_avg_pool(x), num_classes)

"""The CIFAR-10 ResNets (ResNet-20/32/44/56/110), v1 and v2, for 32x32 images.

v1: He et al., "Deep Residual Learning for Image Recognition", 2015, section 4.2: a 3x3
convolution of 16 filters, then three stages of n basic blocks (two 3x3 convolutions each) with
16, 32 and 64 filters on 32x32, 16x16 and 8x8 maps, global average pooling and the classifier:
6n + 2 layers. Where a stage halves the size and doubles the channels, the shortcut is the
parameter-free "option A": the input subsampled and padded with zero channels.

v2: He et al., "Identity Mappings in Deep Residual Networks", 2016: the same nets with
pre-activation blocks (BN-ReLU before each convolution, no ReLU after the sum). The stem is a
bare convolution, since the first block normalises its output, and a last BN-ReLU precedes the
pooling. (The reference benchmarks give the v2 stem its own batch norm and ReLU too, and
leave the ReLU off the v1 stem; both follow the papers here.)
"""
import tensorflow.compat.v1 as tf

from tfhp.models import common

DEPTHS = (20, 32, 44, 56, 110)
VERSIONS = ('v1', 'v2')
_STAGE_FILTERS = (16, 32, 64)


def _shortcut(builder, x, filters, stride):
    """Option A: identity, or x subsampled by `stride` and widened with zero channels."""
    in_channels = builder.channels(x)
    if stride == 1 and in_channels == filters:
        return x
    # A 1x1 max pool with stride 2 keeps every other pixel: subsampling, no arithmetic.
    x = builder.max_pool(x, 1, stride)
    extra = filters - in_channels
    return builder.pad_channels(x, extra // 2, extra - extra // 2)


def basic_block(builder, x, filters, stride, version):
    """Two 3x3 convolutions plus an option-A shortcut.

    Args:
      builder: the LayerBuilder.
      x: the input feature map.
      filters: output channels.
      stride: 1, or 2 to halve the size (on the first convolution).
      version: 'v1' (conv-BN-ReLU, ReLU after the sum) or 'v2' (BN-ReLU-conv, no ReLU after).
    Returns:
      The block output.
    """
    shortcut = _shortcut(builder, x, filters, stride)
    # Explicit padding 1 centres the strided window (SAME would pad bottom and right only).
    if version == 'v1':
        y = builder.conv(x, filters, 3, strides=stride, padding=1, batch_norm=True)
        y = builder.conv(y, filters, 3, padding=1, activation=None, batch_norm=True)
        return tf.nn.relu(y + shortcut)
    y = builder.batch_norm_relu(x)
    y = builder.conv(y, filters, 3, strides=stride, padding=1, batch_norm=True)
    y = builder.conv(y, filters, 3, padding=1, activation=None, use_bias=False)
    return y + shortcut


def build(builder, images, num_classes, depth=20, version='v1'):
    """Returns CIFAR ResNet logits (32x32 by default; any size of at least 4 builds).

    Args:
      builder: the LayerBuilder.
      images: 4-D images in the builder's data format.
      num_classes: number of classes.
      depth: 6n + 2 layers, one of DEPTHS.
      version: 'v1' or 'v2'.
    Returns:
      Logits of shape [batch, num_classes].
    Raises:
      ValueError: an unknown depth or version.
    """
    if depth not in DEPTHS or version not in VERSIONS:
        raise ValueError('depth must be one of %s and version one of %s, got %r, %r'
                         % (DEPTHS, VERSIONS, depth, version))
    blocks_per_stage = (depth - 2) // 6
    if version == 'v1':
        x = builder.conv(images, 16, 3, batch_norm=True)
    else:
        x = builder.conv(images, 16, 3, activation=None, use_bias=False)
    for stage, filters in enumerate(_STAGE_FILTERS):
        for block in range(blocks_per_stage):
            stride = 2 if block == 0 and stage > 0 else 1
            with tf.variable_scope('stage%d/block%d' % (stage + 1, block)):
                x = basic_block(builder, x, filters, stride, version)
    if version == 'v2':
        x = builder.batch_norm_relu(x, name='postnorm')
    return common.classifier(builder, builder.global_avg_pool(x), num_classes)

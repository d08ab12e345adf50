"""ResNet v1, v1.5 and v2 with bottleneck blocks, for ImageNet.

v1: He et al., "Deep Residual Learning for Image Recognition", 2015. A downsampling block is
strided on its first 1x1 convolution, as in the paper; v1.5 strides the 3x3 convolution instead,
which costs more compute and is slightly more accurate. Convolutions are followed by batch norm
and have no bias.

v2: He et al., "Identity Mappings in Deep Residual Networks", 2016. Pre-activation blocks: batch
norm and ReLU come before each convolution, and the sum is not followed by a ReLU, so the
shortcuts form an unbroken identity path; one more batch norm and ReLU precede the classifier.
The stride sits on the first 1x1 convolution as in v1, as the reference benchmarks' `resnet50_v2`
has it (the paper's released Torch code strides the 3x3; the parameters are the same). The stem
keeps its batch norm and ReLU, so the first block skips its own pre-activation, as in the
paper's code (the reference benchmarks normalise twice there).

The CIFAR-10 ResNets (basic blocks, 3 stages) are in resnet_cifar.py.
"""
import tensorflow.compat.v1 as tf

from tfhp.models import common

# Bottleneck blocks per stage, by depth.
_BLOCKS_PER_STAGE = {
    50: (3, 4, 6, 3),
    101: (3, 4, 23, 3),
    152: (3, 8, 36, 3),
}
# Output depth of each stage; the bottleneck is a quarter of it.
_STAGE_DEPTHS = (256, 512, 1024, 2048)
VERSIONS = ('v1', 'v1.5', 'v2')


def bottleneck(builder, x, depth, stride, version):
    """A bottleneck residual block: 1x1, 3x3, 1x1 convolutions plus a shortcut.

    Args:
      builder: the LayerBuilder.
      x: the input feature map.
      depth: output channels (the bottleneck has depth / 4).
      stride: 1, or 2 to downsample.
      version: 'v1' (stride on the first 1x1) or 'v1.5' (stride on the 3x3).
    Returns:
      The block output.
    """
    if stride != 1 or builder.channels(x) != depth:
        # Projection shortcut, wherever the shape changes.
        shortcut = builder.conv(x, depth, 1, strides=stride, activation=None, batch_norm=True,
                                name='shortcut')
    else:
        shortcut = x
    stride_1x1, stride_3x3 = (stride, 1) if version == 'v1' else (1, stride)
    y = builder.conv(x, depth // 4, 1, strides=stride_1x1, batch_norm=True)
    # Explicit padding 1 centres the strided 3x3 window as the paper does; SAME would pad
    # only the bottom and right of an even-sized input.
    y = builder.conv(y, depth // 4, 3, strides=stride_3x3, padding=1, batch_norm=True)
    y = builder.conv(y, depth, 1, activation=None, batch_norm=True)
    return tf.nn.relu(y + shortcut)


def bottleneck_v2(builder, x, depth, stride, preactivated=False):
    """A pre-activation bottleneck block: BN-ReLU, then 1x1, 3x3, 1x1 convolutions, plus x.

    Args:
      builder: the LayerBuilder.
      x: the input feature map (the previous block's un-normalised sum).
      depth: output channels (the bottleneck has depth / 4).
      stride: 1, or 2 to downsample (on the first 1x1 convolution).
      preactivated: x is already normalised and rectified (the stem's output), so the block
        skips its own BN-ReLU, as the paper's code does for the first block.
    Returns:
      The block output, with no activation: the next block normalises it.
    """
    preact = x if preactivated else builder.batch_norm_relu(x)
    if stride != 1 or builder.channels(x) != depth:
        # The projection reads the pre-activation, as the residual branch does; no batch norm
        # after it, since the sum is normalised by the next block.
        shortcut = builder.conv(preact, depth, 1, strides=stride, activation=None,
                                use_bias=False, name='shortcut')
    else:
        shortcut = x
    y = builder.conv(preact, depth // 4, 1, strides=stride, batch_norm=True)
    y = builder.conv(y, depth // 4, 3, padding=1, batch_norm=True)
    y = builder.conv(y, depth, 1, activation=None, use_bias=False)
    return y + shortcut


def build(builder, images, num_classes, depth=50, version='v1'):
    """Returns ResNet logits (224x224 by default; any size of at least 32 builds).

    Args:
      builder: the LayerBuilder.
      images: 4-D images in the builder's data format.
      num_classes: number of classes.
      depth: 50, 101 or 152.
      version: 'v1', 'v1.5' or 'v2'.
    Returns:
      Logits of shape [batch, num_classes].
    """
    if version not in VERSIONS:
        raise ValueError('version must be one of %s, got %r' % (VERSIONS, version))
    x = builder.conv(images, 64, 7, strides=2, padding=3, batch_norm=True)
    x = builder.max_pool(x, 3, 2, 'SAME')
    for stage, (num_blocks, stage_depth) in enumerate(
            zip(_BLOCKS_PER_STAGE[depth], _STAGE_DEPTHS)):
        for block in range(num_blocks):
            # The first stage follows the max pool, so only later stages downsample.
            stride = 2 if block == 0 and stage > 0 else 1
            with tf.variable_scope('stage%d/block%d' % (stage + 2, block)):
                if version == 'v2':
                    x = bottleneck_v2(builder, x, stage_depth, stride,
                                      preactivated=stage == 0 and block == 0)
                else:
                    x = bottleneck(builder, x, stage_depth, stride, version)
    if version == 'v2':
        x = builder.batch_norm_relu(x, name='postnorm')
    return common.classifier(builder, builder.global_avg_pool(x), num_classes)

"""One-tower AlexNet: Krizhevsky, "One weird trick for parallelizing CNNs", 2014.

The one-column net of that paper (64 and 192 filters in the first two convolutions, no LRN) with
the layer widths and padding of torchvision's `alexnet` (conv 64-192-384-256-256, conv1 11x11/4
with padding 2 on 224x224 inputs), whose 61.1M parameters are the usually quoted figure. The
reference benchmarks differ only in using 384 filters in conv4 and 227x227 inputs with VALID
conv1 padding (61.8M parameters); both end in 256x6x6 features.

`build_cifar` is the reference benchmarks' AlexNet for CIFAR-10, the net of TensorFlow's
CIFAR-10 tutorial: two 5x5 convolutions of 64 filters with local response normalisation and
3x3/2 max pooling, dense layers of 384 and 192 units, no dropout.
"""
from tfhp.models import common


def build(builder, images, num_classes):
    """Returns AlexNet logits; `images` must be 224x224 (the fc layers fix the size).


    The model interface (arguments, logits shape) is documented in registry.py.
    """
    x = builder.conv(images, 64, 11, strides=4, padding=2)
    x = builder.max_pool(x, 3, 2)
    x = builder.conv(x, 192, 5, padding=2)
    x = builder.max_pool(x, 3, 2)
    x = builder.conv(x, 384, 3, padding=1)
    x = builder.conv(x, 256, 3, padding=1)
    x = builder.conv(x, 256, 3, padding=1)
    x = builder.max_pool(x, 3, 2)
    return common.classifier(builder, x, num_classes, hidden_units=[4096, 4096], keep_prob=0.5)


def build_cifar(builder, images, num_classes):
    """Returns the CIFAR-10 AlexNet's logits (32x32 by default; any size divisible by 4 builds).


    The model interface (arguments, logits shape) is documented in registry.py.
    """
    x = builder.conv(images, 64, 5)
    x = builder.max_pool(x, 3, 2, 'SAME')
    x = builder.lrn(x)
    x = builder.conv(x, 64, 5)
    x = builder.lrn(x)
    x = builder.max_pool(x, 3, 2, 'SAME')
    return common.classifier(builder, x, num_classes, hidden_units=[384, 192])

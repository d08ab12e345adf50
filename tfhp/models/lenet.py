"""LeNet-5 style network, as in the reference CNN benchmarks (28x28 inputs).

LeCun et al., "Gradient-based learning applied to document recognition", 1998; the benchmark
variant has wider layers: conv5x5 32, pool, conv5x5 64, pool, fc 512, fc classes.
"""
from tfhp.models import common


def build(builder, images, num_classes):
    """Returns LeNet logits for `images` (any square size divisible by 4; 28 by default).


    The model interface (arguments, logits shape) is documented in registry.py.
    """
    x = builder.conv(images, 32, 5)
    x = builder.max_pool(x, 2)
    x = builder.conv(x, 64, 5)
    x = builder.max_pool(x, 2)
    return common.classifier(builder, x, num_classes, hidden_units=[512])

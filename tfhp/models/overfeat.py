"""OverFeat "fast" model: Sermanet et al., "OverFeat: Integrated Recognition, Localization and
Detection using Convolutional Networks", 2014 (231x231 inputs, no LRN)."""
from tfhp.models import common


def build(builder, images, num_classes):
    """Returns OverFeat-fast logits; `images` must be 231x231 (the fc layers fix the size).


    The model interface (arguments, logits shape) is documented in registry.py.
    """
    x = builder.conv(images, 96, 11, strides=4, padding='VALID')  # 231 -> 56
    x = builder.max_pool(x, 2)
    x = builder.conv(x, 256, 5, padding='VALID')  # 28 -> 24
    x = builder.max_pool(x, 2)
    x = builder.conv(x, 512, 3)
    x = builder.conv(x, 1024, 3)
    x = builder.conv(x, 1024, 3)
    x = builder.max_pool(x, 2)  # 12 -> 6
    return common.classifier(builder, x, num_classes, hidden_units=[3072, 4096], keep_prob=0.5)

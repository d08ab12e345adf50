"""VGG nets: Simonyan and Zisserman, "Very Deep Convolutional Networks for Large-Scale Image
Recognition", 2014 (configurations A, D and E = VGG-11, -16 and -19)."""
from tfhp.models import common

# Number of 3x3 convolutions in each of the five stages, by depth.
_CONVS_PER_STAGE = {
    11: (1, 1, 2, 2, 2),
    16: (2, 2, 3, 3, 3),
    19: (2, 2, 4, 4, 4),
}
_STAGE_FILTERS = (64, 128, 256, 512, 512)


def build(builder, images, num_classes, depth=16):
    """Returns VGG logits; `images` must be 224x224 (the fc layers fix the size).

    Args:
      builder: the LayerBuilder.
      images: 4-D images in the builder's data format.
      num_classes: number of classes.
      depth: 11, 16 or 19.
    Returns:
      Logits of shape [batch, num_classes].
    """
    x = images
    for num_convs, filters in zip(_CONVS_PER_STAGE[depth], _STAGE_FILTERS):
        for _ in range(num_convs):
            x = builder.conv(x, filters, 3)
        x = builder.max_pool(x, 2)
    return common.classifier(builder, x, num_classes, hidden_units=[4096, 4096], keep_prob=0.5)

"""The trivial model: two tiny dense layers, to measure everything but compute.

Like the reference benchmarks' trivial model it squeezes the image through a one-unit layer,
so the cost is reading the input once, not a big matrix multiply.
"""


def build(builder, images, num_classes):
    """Returns logits of flatten -> dense(1) -> dense(4096) -> dense(num_classes)."""
    x = builder.dense(builder.flatten(images), 1, activation=None, name='squeeze')
    x = builder.dense(x, 4096, name='hidden')
    return builder.dense(x, num_classes, activation=None, name='logits')

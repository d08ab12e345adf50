"""A synthetic image data set whose labels a CNN can learn, at any image size.

Each image is a coloured shape on a grey, noisy background; the class decides the shape and
its hue, and nothing else does: position, size, background level, noise and a small hue
jitter are random. Class k has hue number k % num_hues and shape k // num_hues, with
num_hues = ceil(num_classes / 4), so hues stay far apart when there are few classes. The
shape's bounding box is stored with the image, so the distorted-crop augmentation keeps part
of the object the label describes. Image i of a subset is drawn from its own seeded random
stream: the data set is the same whatever the thread count.

A convergence run on it means something: a model that learns colour and shape reaches high
accuracy, one that does not stays at chance (1 / num_classes).
"""
import colorsys
import math

import numpy as np

from tfhp.data import codec as codec_lib
from tfhp.data import info as info_lib
from tfhp.data import writer
from tfhp.pipelines import example_format

SHAPES = ('disc', 'square', 'ring', 'cross')
HUE_JITTER = 0.15  # of the spacing between two hues


def _mask(shape, size, center, radius):
    ys, xs = np.mgrid[0:size, 0:size].astype(np.float32) + 0.5
    dy, dx = ys - center[0], xs - center[1]
    distance = np.sqrt(dy * dy + dx * dx)
    if shape == 'disc':
        return distance <= radius
    if shape == 'square':
        return np.maximum(abs(dy), abs(dx)) <= 0.8 * radius
    if shape == 'ring':
        return (distance <= radius) & (distance >= 0.6 * radius)
    bar = radius / 3.0  # cross
    return (np.maximum(abs(dy), abs(dx)) <= radius) & ((abs(dy) <= bar) | (abs(dx) <= bar))


def draw(label, num_classes, image_size, rng):
    """One image of class `label`.

    Args:
      label: class in [0, num_classes).
      num_classes: number of classes.
      image_size: height and width in pixels.
      rng: a numpy Generator.
    Returns:
      (uint8 [image_size, image_size, 3] pixels, (ymin, xmin, ymax, xmax) box as fractions).
    """
    num_hues = int(math.ceil(num_classes / len(SHAPES)))
    hue = (label % num_hues + rng.uniform(-HUE_JITTER, HUE_JITTER)) / num_hues
    shape = SHAPES[label // num_hues]
    background = rng.uniform(0.3, 0.7) * 255.0
    pixels = background + rng.normal(0.0, 20.0, [image_size, image_size, 1])
    pixels = np.repeat(pixels, 3, axis=2)
    radius = rng.uniform(0.2, 0.4) * image_size
    center = rng.uniform(radius, image_size - radius, size=2)
    mask = _mask(shape, image_size, center, radius)
    colour = np.array(colorsys.hsv_to_rgb(hue % 1.0, 0.9, rng.uniform(0.7, 1.0))) * 255.0
    pixels[mask] = colour + rng.normal(0.0, 10.0, [int(mask.sum()), 3])
    low, high = np.clip(center - radius, 0, image_size), np.clip(center + radius, 0, image_size)
    box = (low[0] / image_size, low[1] / image_size, high[0] / image_size,
           high[1] / image_size)
    return np.clip(np.round(pixels), 0, 255).astype(np.uint8), box


def generate(output_dir, num_classes=10, image_size=32, train_examples=10000,
             validation_examples=2000, train_shards=8, validation_shards=2, num_threads=2,
             seed=0, name='synthetic'):
    """Writes a learnable synthetic data set (train and validation shards plus its info).

    Labels are balanced: example i of a subset has label i % num_classes, and the writer's
    order is shuffled so that every shard mixes the classes.

    Args:
      output_dir: where the shards and dataset_info.json go.
      num_classes: number of classes (>= 2).
      image_size: image height and width.
      train_examples, validation_examples: subset sizes.
      train_shards, validation_shards: files per subset.
      num_threads: shards written at once.
      seed: the data set's seed (subsets use different streams).
      name: the name written to the info file.
    Returns:
      The DataSetInfo written.
    Raises:
      ValueError: fewer than 2 classes, an image smaller than 8 pixels, or bad shard counts.
    """
    if num_classes < 2 or image_size < 8:
        raise ValueError('need num_classes >= 2 and image_size >= 8, got %d and %d'
                         % (num_classes, image_size))
    sizes = {'train': train_examples, 'validation': validation_examples}
    shards = {'train': train_shards, 'validation': validation_shards}
    class_names = tuple('%s_%d' % (SHAPES[k // int(math.ceil(num_classes / len(SHAPES)))], k)
                        for k in range(num_classes))
    with codec_lib.JpegCodec() as codec:
        for stream, subset in enumerate(info_lib.SUBSETS):
            order = np.random.default_rng([seed, stream]).permutation(sizes[subset])

            def make_example(index, stream=stream):
                label = int(index % num_classes)
                rng = np.random.default_rng([seed, stream, int(index)])
                pixels, box = draw(label, num_classes, image_size, rng)
                return example_format.make_example(
                    codec.encode(pixels), label, image_size, image_size,
                    text=class_names[label].encode(), filename=b'%s_%d' % (subset.encode(),
                                                                           index),
                    boxes=[box])

            writer.write_subset(output_dir, subset, order, make_example, shards[subset],
                                num_threads)
    info = info_lib.DataSetInfo(name, num_classes, sizes, image_size, class_names)
    info_lib.write(output_dir, info)
    return info

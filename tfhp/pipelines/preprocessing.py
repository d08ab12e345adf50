"""Per-example image preprocessing shared by the RecordInput and tf.data pipelines.

One serialized Example in, one (image, label) pair out, built from ops that depend on nothing
but that record, so that a batch's examples are processed in parallel:

  training:    distorted bounding-box crop (decoding only the crop window of the JPEG), random
               left-right flip, bilinear resize (the reference benchmarks always crop and flip;
               `crop_flip=False` resizes the whole image), and with `distortions` random
               colour distortion;
  evaluation:  decode, central crop of 87.5%, bilinear resize.

CIFAR-10 (`data_name='cifar10'`) has its own, the standard augmentation of the ResNet paper
(He et al. 2015, section 4.2) that the reference benchmarks apply with `distortions`:

  training:    decode (PNG or JPEG), and with `distortions`: pad 4 zero pixels on each side,
               random image_size crop, random left-right flip;
  evaluation:  decode, and nothing else (a central crop or zero padding if image_size is not
               the stored 32).

`distortions` is the reference benchmarks' --distortions: each data set's optional
augmentation (colour for ImageNet-format data, crop and flip for CIFAR-10), off by default.

Images leave scaled to [-1, 1] in the requested layout (NHWC or NCHW) and dtype (float32,
float16 or bfloat16). A label outside [0, num_classes) is an error, like bytes that are not a
JPEG or a record that is not an Example. `with_validity` turns those errors into a flag so
that a pipeline can skip such records and count them.
"""
import tensorflow.compat.v1 as tf

from tfhp.pipelines import example_format

# The crop search of the Inception preprocessing, as in the high-performance guide's benchmarks.
MIN_OBJECT_COVERED = 0.1
ASPECT_RATIO_RANGE = (0.75, 1.33)
AREA_RANGE = (0.05, 1.0)
MAX_ATTEMPTS = 100
EVAL_CENTRAL_FRACTION = 0.875
# Perf: the fast integer IDCT; the reference benchmarks use it too (its error is below JPEG's).
DCT_METHOD = 'INTEGER_FAST'
IMAGE_DTYPES = (tf.float32, tf.float16, tf.bfloat16)
# The data set whose records get the CIFAR-10 preprocessing; any other gets the ImageNet one.
CIFAR10 = 'cifar10'
# Zero pixels added on each side before the random crop of a CIFAR-10 training image.
CIFAR_PADDING = 4

# Graph collection of the int64 variables that count skipped corrupt records (see records.py
# and datasets.py); `skipped_records` sums them.
SKIPPED_RECORDS = 'tfhp_skipped_records'


def _resize(image, image_size):
    """Bilinear resize to image_size x image_size; float32 in [0, 1]."""
    image = tf.image.resize_images(image, [image_size, image_size],
                                   method=tf.image.ResizeMethod.BILINEAR)
    return image / 255.0


def distort_color(image):
    """Random brightness, saturation, hue and contrast of a float image in [0, 1]."""
    image = tf.image.random_brightness(image, max_delta=32.0 / 255.0)
    image = tf.image.random_saturation(image, lower=0.5, upper=1.5)
    image = tf.image.random_hue(image, max_delta=0.2)
    image = tf.image.random_contrast(image, lower=0.5, upper=1.5)
    return tf.clip_by_value(image, 0.0, 1.0)


def train_image(encoded, boxes, image_size, crop_flip=True, color=False):
    """Decodes and augments one training image.

    Args:
      encoded: scalar string, the JPEG bytes.
      boxes: float32 [1, num_boxes, 4] object boxes (none: the whole image counts).
      image_size: output height and width.
      crop_flip: random crop around the boxes and random flip; False resizes the whole
        image.
      color: random colour distortion too.
    Returns:
      float32 [image_size, image_size, 3] in [0, 1].
    """
    if crop_flip:
        # tf.compat.v1's op ignores the graph's seed unless given one: without this, runs of
        # one --tf_random_seed crop differently.
        seed, seed2 = tf.get_seed(None)
        begin, size, _ = tf.image.sample_distorted_bounding_box(
            tf.image.extract_jpeg_shape(encoded), bounding_boxes=boxes, seed=seed, seed2=seed2,
            min_object_covered=MIN_OBJECT_COVERED, aspect_ratio_range=ASPECT_RATIO_RANGE,
            area_range=AREA_RANGE, max_attempts=MAX_ATTEMPTS,
            use_image_if_no_bounding_boxes=True)
        # Perf: decode only the crop window instead of the whole JPEG, then crop.
        window = tf.stack([begin[0], begin[1], size[0], size[1]])
        image = tf.image.decode_and_crop_jpeg(encoded, window, channels=3,
                                              dct_method=DCT_METHOD)
        image = tf.image.random_flip_left_right(image)
    else:
        image = tf.image.decode_jpeg(encoded, channels=3, dct_method=DCT_METHOD)
    image = _resize(image, image_size)
    return distort_color(image) if color else image


def eval_image(encoded, image_size):
    """Decodes one evaluation image: central crop, resize; float32 [size, size, 3] in [0, 1]."""
    image = tf.image.decode_jpeg(encoded, channels=3, dct_method=DCT_METHOD)
    image = tf.image.central_crop(image, EVAL_CENTRAL_FRACTION)
    return _resize(image, image_size)


def cifar_train_image(image, image_size):
    """Augments one decoded CIFAR-10 training image: zero-pad, random crop, random flip.

    The padding is black (0 before scaling, so -1 after `finish`), as in the reference
    benchmarks, which pad before scaling too. The crop is an image_size window at a uniformly
    random offset in the padded image, so each pixel moves by up to CIFAR_PADDING.

    Args:
      image: uint8 [height, width, 3].
      image_size: output height and width.
    Returns:
      float32 [image_size, image_size, 3] in [0, 1].
    """
    padded_size = image_size + 2 * CIFAR_PADDING
    image = tf.image.resize_with_crop_or_pad(image, padded_size, padded_size)
    image = tf.image.random_crop(image, [image_size, image_size, 3])
    image = tf.image.random_flip_left_right(image)
    return tf.cast(image, tf.float32) / 255.0


def cifar_eval_image(image, image_size):
    """One decoded CIFAR-10 evaluation image, unchanged at 32x32 (else centrally cropped or
    zero-padded to image_size); float32 [image_size, image_size, 3] in [0, 1]."""
    image = tf.image.resize_with_crop_or_pad(image, image_size, image_size)
    return tf.cast(image, tf.float32) / 255.0


def decode_any(encoded):
    """uint8 [height, width, 3] from PNG or JPEG bytes (CIFAR-10 records are PNG)."""
    image = tf.io.decode_image(encoded, channels=3, expand_animations=False)
    image.set_shape([None, None, 3])
    return image


def finish(image, data_format='NHWC', dtype=tf.float32):
    """Scales a [0, 1] HWC image to [-1, 1], in `data_format` ('NHWC' or 'NCHW') and dtype."""
    image = image * 2.0 - 1.0
    if data_format == 'NCHW':
        image = tf.transpose(image, [2, 0, 1])
    return tf.cast(image, dtype)


def checked_label(label, num_classes):
    """`label`, after an assertion that it lies in [0, num_classes)."""
    in_range = tf.logical_and(label >= 0, label < num_classes)
    check = tf.debugging.Assert(in_range, ['label out of range [0, %d):' % num_classes, label])
    with tf.control_dependencies([check]):
        return tf.identity(label)


def example_fn(image_size, num_classes, train=True, distortions=False, crop_flip=True,
               data_format='NHWC', dtype=tf.float32, data_name=None):
    """Returns fn(serialized) -> (image, label) for one Example record.

    Args:
      image_size: output height and width.
      num_classes: labels must lie in [0, num_classes).
      train: training augmentation (True) or the evaluation crop (False).
      distortions: the data set's optional training augmentation (see the module docstring):
        colour distortion for ImageNet-format data, pad, crop and flip for CIFAR-10.
      crop_flip: ImageNet-format training images are randomly cropped and flipped (see
        `train_image`); CIFAR-10 ignores it.
      data_format: 'NHWC' or 'NCHW' (the image has no batch dimension: HWC or CHW).
      dtype: one of IMAGE_DTYPES.
      data_name: the data set's name: CIFAR10 selects the CIFAR-10 preprocessing, any other
        (None included) the ImageNet one.
    Raises:
      ValueError: an unknown data format or dtype.
    """
    if data_format not in ('NHWC', 'NCHW'):
        raise ValueError('data_format must be NHWC or NCHW, got %r' % (data_format,))
    if dtype not in IMAGE_DTYPES:
        raise ValueError('image dtype must be one of %s, got %s' % (IMAGE_DTYPES, dtype))

    def fn(serialized):
        encoded, label, boxes = example_format.parse(serialized)
        if data_name == CIFAR10:
            image = decode_any(encoded)
            if train and distortions:
                image = cifar_train_image(image, image_size)
            else:
                image = cifar_eval_image(image, image_size)
        elif train:
            image = train_image(encoded, boxes, image_size, crop_flip, color=distortions)
        else:
            image = eval_image(encoded, image_size)
        return finish(image, data_format, dtype), checked_label(label, num_classes)
    return fn


def with_validity(fn, serialized):
    """Runs fn(serialized) so that an error becomes a flag instead of failing the step.

    The record goes through a one-element tf.data pipeline that drops an element whose ops
    fail; an empty result becomes zeros.

    Args:
      fn: per-record function returning a nest of tensors with static shapes.
      serialized: a scalar string tensor.
    Returns:
      (outputs, valid): fn's outputs (zeros when it failed) and a boolean scalar.
    """
    attempt = tf.data.Dataset.from_tensors(serialized).map(lambda s: (fn(s), True))
    attempt = attempt.ignore_errors()
    zeros = tf.nest.map_structure(lambda s: tf.zeros(s.shape, s.dtype),
                                  attempt.element_spec[0])
    fallback = tf.data.Dataset.from_tensors((zeros, False))
    outputs, valid = attempt.concatenate(fallback).take(1).get_single_element()
    return outputs, valid


def skipped_records_counter():
    """A new local int64 variable counting skipped records, in the SKIPPED_RECORDS collection."""
    return tf.Variable(0, dtype=tf.int64, trainable=False, name='skipped_records',
                       collections=[tf.GraphKeys.LOCAL_VARIABLES, SKIPPED_RECORDS])


def skipped_records(graph=None):
    """Total of the graph's skipped-record counters, or None when no pipeline skips records."""
    counters = (graph or tf.get_default_graph()).get_collection(SKIPPED_RECORDS)
    if not counters:
        return None
    return tf.add_n([c.read_value() for c in counters])

"""The ImageNet TFRecord format: one `tf.train.Example` per image, with these feature keys.

It is the layout of the TFRecords made by the usual ImageNet conversion scripts, so tfhp reads
those files as they are and writes its own data sets (`tfhp.data`) the same way. Shards are
named `<subset>-<index>-of-<count>`, e.g. `train-00017-of-01024`. Bounding boxes are optional
(validation images usually have none) and are fractions of the image size.
"""
import tensorflow.compat.v1 as tf

ENCODED = 'image/encoded'      # bytes: the JPEG (or, for CIFAR-10, PNG) file
FORMAT = 'image/format'        # bytes: b'JPEG' or b'PNG'
HEIGHT = 'image/height'        # int64
WIDTH = 'image/width'          # int64
COLORSPACE = 'image/colorspace'  # bytes: b'RGB'
CHANNELS = 'image/channels'    # int64: 3
FILENAME = 'image/filename'    # bytes: where the image came from
LABEL = 'image/class/label'    # int64: the class index
TEXT = 'image/class/text'      # bytes: the class name
XMIN = 'image/object/bbox/xmin'  # float list, one per box, in [0, 1]
YMIN = 'image/object/bbox/ymin'
XMAX = 'image/object/bbox/xmax'
YMAX = 'image/object/bbox/ymax'
BOX_KEYS = (YMIN, XMIN, YMAX, XMAX)  # the order tf.image's bounding-box ops take

# Shard file names; the usual scripts write 1024 training and 128 validation shards for ImageNet.
SHARD_NAME = '%s-%05d-of-%05d'


def shard_pattern(directory, subset):
    """The glob of a subset's shards in `directory`, e.g. '<dir>/train-*-of-*'."""
    return '%s/%s-*-of-*' % (directory.rstrip('/'), subset)


def _bytes(value):
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _ints(value):
    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def _floats(values):
    return tf.train.Feature(float_list=tf.train.FloatList(value=list(values)))


def make_example(encoded, label, height, width, text=b'', filename=b'', boxes=(),
                 image_format=b'JPEG'):
    """Builds one image's `tf.train.Example`.

    Args:
      encoded: the encoded image (JPEG unless `image_format` says otherwise).
      label: integer class index.
      height, width: image size in pixels.
      text: class name (bytes).
      filename: the source file name (bytes).
      boxes: (ymin, xmin, ymax, xmax) tuples, fractions of the image size.
      image_format: b'JPEG' or b'PNG', stored under FORMAT.
    Returns:
      A `tf.train.Example`.
    """
    feature = {ENCODED: _bytes(encoded), FORMAT: _bytes(image_format), HEIGHT: _ints(height),
               WIDTH: _ints(width), COLORSPACE: _bytes(b'RGB'), CHANNELS: _ints(3),
               FILENAME: _bytes(filename), LABEL: _ints(label), TEXT: _bytes(text)}
    for i, key in enumerate(BOX_KEYS):
        feature[key] = _floats(box[i] for box in boxes)
    return tf.train.Example(features=tf.train.Features(feature=feature))


def parse(serialized):
    """Parses one serialized Example into its image bytes, label and boxes.

    Args:
      serialized: a scalar string tensor.
    Returns:
      (encoded, label, boxes): a scalar string, an int32 scalar (-1 when the record has none),
      and float32 boxes of shape [1, num_boxes, 4] in (ymin, xmin, ymax, xmax) order.
    """
    spec = {ENCODED: tf.io.FixedLenFeature([], tf.string),
            LABEL: tf.io.FixedLenFeature([], tf.int64, default_value=-1)}
    spec.update({key: tf.io.VarLenFeature(tf.float32) for key in BOX_KEYS})
    features = tf.io.parse_single_example(serialized, spec)
    coordinates = [tf.sparse.to_dense(features[key]) for key in BOX_KEYS]
    boxes = tf.expand_dims(tf.stack(coordinates, axis=1), 0)
    return features[ENCODED], tf.cast(features[LABEL], tf.int32), boxes

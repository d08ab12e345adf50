"""Finds the records an input pipeline would fail on, naming each one's file and index.

Checks, in the order the pipelines meet them: the TFRecord framing (length and checksums), that
the record is a `tf.train.Example`, that it has image bytes of the data set's format (JPEG, or
PNG for CIFAR-10) under `image/encoded` and an integer label in [0, num_classes), and that the
image decodes. A framing error ends the scan of its file (the reader cannot find the next
record); so does a file cut inside a record's header, which every reader takes silently for the
file's end, and which this scan reports. The training graph cannot say which file a failing
record came from; `tfhp.data.errors` runs this scan when a step fails on input.
"""
import collections

import tensorflow.compat.v1 as tf
from google.protobuf import message

from tfhp.data import codec as codec_lib
from tfhp.ops import record_input
from tfhp.pipelines import example_format

Problem = collections.namedtuple('Problem', ['path', 'index', 'reason'])
# How the reason of every framing problem begins (a pipeline skips such a record differently,
# or not at all; see `is_framing`).
FRAMING = 'corrupt TFRecord framing'


# How to recognise each image format's bytes.
_SIGNATURES = {'JPEG': codec_lib.is_jpeg, 'PNG': codec_lib.is_png}


def _example_problem(record, num_classes, codec, image_format):
    """Why `record` would fail, or None."""
    try:
        example = tf.train.Example.FromString(record)
    except message.DecodeError:
        return 'not a tf.train.Example'
    feature = example.features.feature
    encoded = feature[example_format.ENCODED].bytes_list.value
    labels = feature[example_format.LABEL].int64_list.value
    if len(encoded) != 1:
        return 'no %s bytes' % example_format.ENCODED
    if len(labels) != 1:
        return 'no %s integer' % example_format.LABEL
    if not 0 <= labels[0] < num_classes:
        return 'label %d out of range [0, %d)' % (labels[0], num_classes)
    if not _SIGNATURES[image_format](encoded[0]):
        return '%s bytes are not a %s image' % (example_format.ENCODED, image_format)
    try:
        codec.decode(encoded[0])
    except codec_lib.ImageDecodeError as e:
        return 'the %s does not decode (%s)' % (image_format, e)
    return None


def scan(files, num_classes, max_problems=None, image_format='JPEG', framing_only=False):
    """Reads every record of `files` and reports the first `max_problems` problems.

    Args:
      files: TFRecord file names.
      num_classes: labels must lie in [0, num_classes).
      max_problems: stop after this many problems (None: read everything).
      image_format: 'JPEG' or 'PNG', the data set's (`DataSetInfo.image_format`).
      framing_only: check the TFRecord framing alone, not what the records hold (much faster:
        no image is decoded).
    Returns:
      (records_read, [Problem(path, index, reason)]).
    Raises:
      ValueError: an unknown image format.
    """
    if image_format not in _SIGNATURES:
        raise ValueError('image_format must be one of %s, got %r' % (sorted(_SIGNATURES),
                                                                     image_format))
    problems, count = [], 0
    with codec_lib.JpegCodec() as codec:
        for path in files:
            index = read = 0
            try:
                for record in tf.io.tf_record_iterator(path):
                    reason = None if framing_only else _example_problem(
                        record, num_classes, codec, image_format)
                    if reason:
                        problems.append(Problem(path, index, reason))
                    index += 1
                    read += len(record) + record_input.RECORD_OVERHEAD
                    if max_problems is not None and len(problems) >= max_problems:
                        return count + index, problems
                size = tf.io.gfile.stat(path).length
                if read != size:
                    problems.append(Problem(path, index, '%s (cut short: %d byte(s) after the '
                                            'last complete record)' % (FRAMING, size - read)))
            except tf.errors.DataLossError as e:
                problems.append(Problem(path, index, '%s (%s)' % (FRAMING, e.message)))
            count += index
            if max_problems is not None and len(problems) >= max_problems:
                break
    return count, problems


def first_problem(files, num_classes, image_format='JPEG', framing_only=False):
    """The first Problem in `files` (of framing only, with `framing_only`), or None."""
    _, problems = scan(files, num_classes, max_problems=1, image_format=image_format,
                       framing_only=framing_only)
    return problems[0] if problems else None


def is_framing(problem):
    """Whether `problem` is in the TFRecord framing (no reader can go past it in its file)."""
    return problem.reason.startswith(FRAMING)


def describe(problem):
    """'<path> record <index>: <reason>'."""
    return '%s record %d: %s' % problem

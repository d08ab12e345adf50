"""Names the record behind an input pipeline's failure: `describe_corrupt_input`.

When a step fails on a corrupt record, TensorFlow's error names the op that failed, never the
file or record it was given. This module decides whether the error came from the input
pipeline and, if so, scans the subset (`tfhp.data.check`) up to the first problem that pipeline
could not have skipped, naming its file and record index. The one-process runner
(`tfhp.runner.benchmark`) calls it on the error a step raised, and a distributed worker can.
"""
import re

import tensorflow.compat.v1 as tf

from tfhp.data import check
from tfhp.ops import record_input
from tfhp.ops import scopes
from tfhp.pipelines import example_format

# The graph nodes an OpError's message names: '[[{{node a/b}}]]', then '[[a/b]]' for each node
# the failure passed through. The error's `op` is only the first of them, and None when that
# one lives inside a tf.data function: a corrupt JPEG on the tf.data path names
# ExtractJpegShape, then input/IteratorGetNext (measured, TF 2.21).
_NODE_RE = re.compile(r'\[\[(?:\{\{node )?([^\s\]\}]+)')
# The input pipelines' name scopes, with the suffix that makes a scope used twice unique.
_INPUT_SCOPE_RE = re.compile(r'^(%s|%s)(_\d+)?$' % (scopes.INPUT, scopes.PREPROCESS))


def _is_input_failure(error):
    """Whether any node `error` names lies in an input or preprocessing scope."""
    names = _NODE_RE.findall(error.message)
    if error.op is not None:
        names.append(error.op.name)
    return any(_INPUT_SCOPE_RE.match(scope) for name in names for scope in name.split('/'))


def _hint(problem, data_config):
    """What the flags can do about `problem`; never suggests a flag already given."""
    if not check.is_framing(problem):
        return '--skip_corrupt_records skips and counts such records'
    tf_data_skips = 'skips the rest of such a file and counts it'
    if data_config.use_datasets:
        return '--skip_corrupt_records ' + tf_data_skips
    if data_config.skip_corrupt_records:
        return 'RecordInput cannot skip broken framing; with --use_datasets it ' + tf_data_skips
    return ('RecordInput cannot skip broken framing; with --use_datasets, '
            '--skip_corrupt_records ' + tf_data_skips)


def describe_corrupt_input(data_config, error, subset, info):
    """Names the corrupt record behind a failed step, or returns None.

    Only an InvalidArgumentError or DataLossError of an op in the input or preprocessing scope
    leads to a scan, of the whole subset in the worst case. When the pipeline skips corrupt
    records, only what it cannot skip is looked for: broken framing on the RecordInput path
    (the tf.data pipeline skips every problem).

    Args:
      data_config: the run's `tfhp.config.DataConfig`.
      error: the `tf.errors.OpError` a session run raised.
      subset: 'train' or 'validation', the files the pipeline read.
      info: the data set's `tfhp.data.info.DataSetInfo` (labels lie in [0, num_classes),
        images are in its image_format).
    Returns:
      One line, '--data_dir: <file> record <index>: <reason> (<what to do>)', or None when the
      error is not an input failure or the scan finds no problem.
    """
    skipping = data_config.skip_corrupt_records
    if not skipping:
        unskipped = (tf.errors.InvalidArgumentError, tf.errors.DataLossError)
    else:
        unskipped = () if data_config.use_datasets else (tf.errors.DataLossError,)
    if not (data_config.data_dir and isinstance(error, unskipped) and
            _is_input_failure(error)):
        return None
    files = record_input.list_files(example_format.shard_pattern(data_config.data_dir, subset),
                                    keep_broken=True)
    problem = check.first_problem(files, info.num_classes, info.image_format,
                                  framing_only=skipping)
    if not problem:
        return None
    return '--data_dir: %s (%s)' % (check.describe(problem), _hint(problem, data_config))

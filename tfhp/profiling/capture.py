"""Writing a traced step: a Chrome trace for the eye, its RunMetadata for the analyser.

`write_trace(run_metadata, path)` writes `path` (Chrome trace JSON: open it in chrome://tracing
or https://ui.perfetto.dev; or, `chrome=False`, the step's StepStats as a text proto, as
tf_cnn_benchmarks' --use_chrome_trace_format=false) and `path + RUN_METADATA_SUFFIX` (the
RunMetadata proto that `python -m tfhp.trace` reads). Capture a step with
`tfhp.session.run_traced`.
"""
import os

import tensorflow.compat.v1 as tf
from tensorflow.python.client import timeline  # pylint: disable=g-direct-tensorflow-import

RUN_METADATA_SUFFIX = '.runmeta.pb'
# Appended to each device of a background run merged into a step's trace (`with_background`).
BACKGROUND_DEVICE = '%s [%s]'


def chrome_trace(run_metadata, show_memory=False):
    """The Chrome trace (a JSON string) of one step, with dataflow arrows between ops.

    Args:
      run_metadata: a `RunMetadata` from a FULL_TRACE run.
      show_memory: also show every tensor's allocation and each allocator's bytes in use.
    Returns:
      The trace as a JSON string ({"traceEvents": [...]}).
    """
    return timeline.Timeline(run_metadata.step_stats).generate_chrome_trace_format(
        show_dataflow=True, show_memory=show_memory)


def with_background(run_metadata, background, until_micros=None):
    """The step's RunMetadata with the traced background runs that overlap it in time (or the
    time from its start to until_micros, when that is later than its end: the work a step
    leaves beside it, such as priority pushes after a step that ends once they are queued).

    The runs of a hook's threads beside the step (`session_hooks.RunInLoops`: background
    pulls, the sync chief's updates) are not part of the step's run; merged, each of their
    devices is a lane of its own, named `<device> [<loop op>]`, on the step's clock.

    Args:
      run_metadata: the step's `RunMetadata` (FULL_TRACE).
      background: [(loop op name, RunMetadata)].
      until_micros: None, or the end of the window merged, in microseconds since the epoch.
    Returns:
      A new `RunMetadata`.
    """
    merged = tf.RunMetadata()
    merged.CopyFrom(run_metadata)
    start, end = _span(run_metadata)
    end = max(end, until_micros or end)
    for name, metadata in background:
        other_start, other_end = _span(metadata)
        if other_end < start or other_start > end:
            continue
        for dev_stats in metadata.step_stats.dev_stats:
            lane = merged.step_stats.dev_stats.add()
            lane.CopyFrom(dev_stats)
            lane.device = BACKGROUND_DEVICE % (dev_stats.device, name)
    return merged


def duration_s(run_metadata):
    """The traced run's length in seconds, from its first op's start to its last op's end."""
    start, end = _span(run_metadata)
    return max(0, end - start) / 1e6


def _span(run_metadata):
    """(first op's start, last op's end) in microseconds since the epoch."""
    nodes = [n for d in run_metadata.step_stats.dev_stats for n in d.node_stats]
    if not nodes:
        return 0, -1
    return (min(n.all_start_micros for n in nodes),
            max(n.all_start_micros + n.all_end_rel_micros for n in nodes))


def write_trace(run_metadata, path, show_memory=False, chrome=True):
    """Writes the Chrome trace (or, `chrome=False`, the StepStats text proto) to `path` and the
    RunMetadata beside it; returns both paths."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, 'w') as f:
        f.write(chrome_trace(run_metadata, show_memory) if chrome else
                str(run_metadata.step_stats))
    metadata_path = path + RUN_METADATA_SUFFIX
    with open(metadata_path, 'wb') as f:
        f.write(run_metadata.SerializeToString())
    return path, metadata_path


def load_run_metadata(path):
    """Reads a RunMetadata written by `write_trace`, given either of the two paths.

    Raises:
      ValueError: naming the path, when it holds neither a RunMetadata nor a Chrome trace
        written next to one.
    """
    if not path.endswith(RUN_METADATA_SUFFIX) and os.path.exists(path + RUN_METADATA_SUFFIX):
        path += RUN_METADATA_SUFFIX
    with open(path, 'rb') as f:
        data = f.read()
    if data.lstrip()[:1] == b'{':
        raise ValueError('%s is a Chrome trace without its RunMetadata (%s); the analyser '
                         'needs the RunMetadata' % (path, os.path.basename(path) +
                                                    RUN_METADATA_SUFFIX))
    metadata = tf.RunMetadata()
    try:
        metadata.ParseFromString(data)
    except Exception as e:  # protobuf raises its own DecodeError
        raise ValueError('%s is not a RunMetadata proto: %s' % (path, e)) from None
    if not metadata.step_stats.dev_stats:
        raise ValueError('%s holds no step stats (was the step run with FULL_TRACE?)' % path)
    return metadata


def trace_writer(path, show_memory, log, chrome=True):
    """An `on_trace(step, run_metadata)` callback (see `tfhp.session.run_steps`) that writes
    the trace to `path` and logs where."""
    def on_trace(step, run_metadata):
        trace_path, metadata_path = write_trace(run_metadata, path, show_memory, chrome)
        log('Traced step %d: %s (analyse: python -m tfhp.trace %s)' % (step, trace_path,
                                                                       metadata_path))
    return on_trace


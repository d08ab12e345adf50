"""TensorBoard summaries of training, written to the train_dir with the graph.

Verbosity (the meaning of tf_cnn_benchmarks' --summary_verbosity):
  0  none;
  1  loss, learning rate and images/sec;
  2  also the global norm of the applied gradients and each variable's gradient norm;
  3  also a histogram of each variable's gradient.
Summaries are fetched with the train op on every `save_summaries_steps`-th timed step, so those
steps cost a little more (level 3 the most); measure with summaries off. A traced step's
RunMetadata goes to the same writer (`run_metadata_writer`), for TensorBoard's per-node compute
time and memory in its Graphs tab.
"""
import itertools

import tensorflow.compat.v1 as tf

from tfhp import session as session_lib

# Summary ops sit in this absolute scope (trailing '/'), under no stage wherever they are
# built: they run only on summary steps.
_SCOPE = 'summaries/'


def _add_summary(tag, tensor, histogram=False):
    """Adds a scalar (or histogram) summary with exactly `tag` (tf.summary.* would prefix the
    name scope and uniquify it, e.g. 'learning_rate_1')."""
    with tf.device('/cpu:0'):  # summary kernels are CPU-only
        if histogram:
            op = tf.raw_ops.HistogramSummary(tag=tag, values=tensor)
        else:
            op = tf.raw_ops.ScalarSummary(tags=tag, values=tensor)
    tf.add_to_collection(tf.GraphKeys.SUMMARIES, op)


def _gradient_summaries(grads_and_vars, verbosity):
    grads = [(g.values if isinstance(g, tf.IndexedSlices) else g, v)
             for g, v in grads_and_vars if g is not None]
    with tf.name_scope(_SCOPE):
        norms = []
        for grad, var in grads:
            norms.append(tf.norm(tf.cast(grad, tf.float32)))
            _add_summary('gradient_norm/' + var.op.name, norms[-1])
            if verbosity >= 3:
                _add_summary('gradient/' + var.op.name, grad, histogram=True)
        _add_summary('gradient_norm', tf.sqrt(tf.add_n([n * n for n in norms])))


def summarizing_optimizer_fn(optimizer_fn, verbosity):
    """Wraps a no-argument optimizer factory so its first optimizer summarises its gradients.

    The gradients summarised are the ones applied (after aggregation). Only the first optimizer
    made does it: a manager that makes one per tower applies the same mean on each.

    Args:
      optimizer_fn: a no-argument callable returning a `tf.train.Optimizer`.
      verbosity: summary verbosity; below 2 `optimizer_fn` is returned unchanged.
    Returns:
      A no-argument callable returning an optimizer.
    """
    if verbosity < 2:
        return optimizer_fn
    made = itertools.count()

    def make():
        optimizer = optimizer_fn()
        if next(made) == 0:
            apply_gradients = optimizer.apply_gradients

            # Only this instance's method is replaced, so the optimizer keeps its class and
            # every other method (managers may ask it for slots or variables).
            def summarize_and_apply(grads_and_vars, *args, **kwargs):
                grads_and_vars = list(grads_and_vars)
                _gradient_summaries(grads_and_vars, verbosity)
                return apply_gradients(grads_and_vars, *args, **kwargs)
            optimizer.apply_gradients = summarize_and_apply
        return optimizer
    return make


def merged_summary(verbosity, scalars):
    """Adds a scalar summary per tensor of `scalars` and returns the op merging every summary
    of the graph (those of `summarizing_optimizer_fn` included), or None at verbosity 0.

    Args:
      verbosity: summary verbosity.
      scalars: {tag: scalar tensor}, e.g. {'loss': ..., 'learning_rate': ...}.
    """
    if verbosity < 1:
        return None
    with tf.name_scope(_SCOPE):
        for tag, tensor in sorted(scalars.items()):
            _add_summary(tag, tensor)
    return tf.summary.merge_all()


def observer(summary_op, global_step, writer, every, images_per_step):
    """A `tfhp.session.Observer` that writes the summaries and images/sec every `every` steps.

    Args:
      summary_op: from `merged_summary`.
      global_step: the global step tensor (summaries are written at its value).
      writer: a `tf.summary.FileWriter`.
      every: write on every this many timed steps.
      images_per_step: the global batch, for images/sec over the last `every` steps.
    Returns:
      A `tfhp.session.Observer`.
    """
    def write(step, durations, values):
        del step  # summaries are indexed by global step
        recent = durations[-every:]
        rate = tf.Summary(value=[tf.Summary.Value(
            tag='images_per_sec', simple_value=images_per_step * len(recent) / sum(recent))])
        writer.add_summary(values['summary'], values['global_step'])
        writer.add_summary(rate, values['global_step'])
    return session_lib.Observer(every, {'summary': summary_op, 'global_step': global_step},
                                write)


def run_metadata_tag(step):
    """The tag a traced step's RunMetadata is written under: 'step_<step>' (the timed step it
    was traced before, as --trace_step names it); TensorBoard lists it in the Graphs tab."""
    return 'step_%d' % step


def run_metadata_writer(writer, global_step):
    """An `on_trace(step, run_metadata)` callback (see `tfhp.session.run_steps`) that adds the
    traced step's RunMetadata to the summaries, under `run_metadata_tag(step)`.

    TensorBoard reads the step stats (per-node compute time, memory) and the partition graphs
    from it; the trace files of `tfhp.profiling.capture` hold the same proto.

    Args:
      writer: a `tf.summary.FileWriter`.
      global_step: a no-argument callable returning the global step to file it at (the
        traced step has already run: its value after that step).
    Returns:
      The callback.
    """
    def on_trace(step, run_metadata):
        writer.add_run_metadata(run_metadata, run_metadata_tag(step), global_step())
    return on_trace

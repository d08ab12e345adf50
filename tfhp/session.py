"""Sessions: their ConfigProto, staging warm-up, the timed step loop and checkpoints."""
import collections
import itertools
import os
import time
import warnings

import tensorflow.compat.v1 as tf

from tfhp import timing


# TensorFlow sizes its inter-op pool and the CPU device's intra-op pool once per process, from
# the first session's ConfigProto, and silently ignores the sizes later sessions ask for.
_process_thread_pools = []


# Measured (docs/results/cpu_defaults.md#cpu-defaults): when the graph itself decodes and preprocesses
# images (the RecordInput path), those ops share the inter-op pool with the model's kernels, and
# a oneDNN kernel blocks its inter-op thread while the intra-op pool does its work; two threads
# per core keep the input ops running beside it (+25% on trivial b32 with real records on 2
# cores). Synthetic data and tf.data (which has its own threads) gain nothing from it.
INTER_OP_THREADS_PER_CORE_WHEN_PREPROCESSING = 2


def inter_op_threads(requested, preprocesses_in_graph, num_cores=None):
    """The inter-op pool size to ask for: `requested`, or tfhp's default when it is 0.

    The default is TensorFlow's own (0: one thread per core), except when the graph
    preprocesses images (`tfhp.pipelines.preprocesses_in_graph`): then
    INTER_OP_THREADS_PER_CORE_WHEN_PREPROCESSING per core of `num_cores` (default: the cores
    this process may run on).
    """
    if requested or not preprocesses_in_graph:
        return requested
    if not num_cores:
        # The cores this process may run on (a container's share), where the OS says.
        affinity = getattr(os, 'sched_getaffinity', None)
        num_cores = len(affinity(0)) if affinity else os.cpu_count()
    return INTER_OP_THREADS_PER_CORE_WHEN_PREPROCESSING * num_cores


def config_proto(num_cpu_devices=1, num_intra_threads=0, num_inter_threads=0,
                 allow_soft_placement=False):
    """A ConfigProto with `num_cpu_devices` virtual CPU devices and the given thread pools.

    Soft placement is off by default so that an op that cannot run where tfhp put it fails
    loudly instead of moving silently (which would falsify a measurement).

    Warns (RuntimeWarning) when an earlier ConfigProto of this process asked for other thread
    pool sizes: TensorFlow keeps the first session's pools for the whole process, so a
    measurement that needs other sizes must run in a process of its own.
    """
    pools = (num_intra_threads, num_inter_threads)
    if not _process_thread_pools:
        _process_thread_pools.append(pools)
    elif _process_thread_pools[0] != pools:
        warnings.warn(
            'num_intra_threads=%d, num_inter_threads=%d are ignored: '
            'TensorFlow keeps the thread pools of the first session of this process (%d, %d); '
            'run this configuration in a process of its own'
            % (pools + _process_thread_pools[0]), RuntimeWarning, stacklevel=2)
    proto = tf.ConfigProto(device_count={'CPU': num_cpu_devices},
                           intra_op_parallelism_threads=num_intra_threads,
                           inter_op_parallelism_threads=num_inter_threads,
                           allow_soft_placement=allow_soft_placement)
    proto.gpu_options.allow_growth = True
    return proto


def warm_up(sess, warmup_ops):
    """Runs the warm-up prefixes warmup_ops[:1], warmup_ops[:2], ... (see pipelines.base)."""
    for k in range(len(warmup_ops)):
        sess.run(warmup_ops[:k + 1])


Observer = collections.namedtuple('Observer', [
    'every',     # on timed steps i with i % every == 0,
    'fetches',   # fetch these with the train op
    'callback',  # and call callback(i, durations_so_far, fetched_values)
])


def run_traced(sess, fetches, feed_dict=None):
    """Runs `fetches` once with FULL_TRACE and returns (values, RunMetadata).

    The metadata holds the step stats (op timings, memory) and the partition graphs (whose
    _Send/_Recv pairs are the cross-device transfers). Never time a traced run: tracing adds
    overhead.
    """
    options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE, output_partition_graphs=True)
    metadata = tf.RunMetadata()
    values = sess.run(fetches, feed_dict=feed_dict, options=options, run_metadata=metadata)
    return values, metadata


def step_fetches(train_op, observers):
    """Every fetch list `run_steps` may run: train_op alone, then with each set of observers.

    Run each once before timing: the first run of a new fetch signature builds its executor.
    """
    return [train_op] + [[train_op, [o.fetches for o in due]]
                         for size in range(1, len(observers) + 1)
                         for due in itertools.combinations(observers, size)]


def run_steps(sess, train_op, num_steps, images_per_step, observers=(), first_step=1,
              trace_step=None, on_trace=None, run=None, on_step=None, before_trace=None):
    """Runs `train_op` (once a step) up to num_steps times and returns their `timing.StepTimes`.

    The one timed loop of every mode: one-process runs call it with a session's `run`; a
    between-graph worker with a run that bounds the step and names the peer a failed one lost,
    and with `on_step` reading the job's control values fetched with the step. The loop is kept
    lean (one run and one clock read per step) so that its figures match a bare
    `for: sess.run(train_op)` loop; extra fetches happen only on observers' steps.

    Args:
      sess: a session.
      train_op: what every step runs: an op, or a list whose value `on_step` reads.
      num_steps: the most timed steps (None: until `on_step` says).
      images_per_step: the global batch size.
      observers: `Observer`s; their callbacks' time is charged to no step (but to wall time).
      first_step: the index of the first step, so that calls can continue a numbering.
      trace_step: before timed step `trace_step`, one extra step runs with FULL_TRACE and
        `on_trace(trace_step, run_metadata)` is called; neither is timed nor in wall time.
      on_trace: see trace_step.
      before_trace: called before one more extra, untimed and untraced step that precedes the
        traced one (so that a hook's background runs, started during it, are traced as the
        step is: `session_hooks.RunInLoops.trace_loops`); None: no such step.
      run: run(fetches) -> values, in place of sess.run.
      on_step: on_step(value of train_op), called after each step (untimed); True ends the loop.
    Returns:
      A `timing.StepTimes` (at least one step runs).
    """
    run = run or sess.run
    durations = []
    untimed = 0.0
    start = time.perf_counter()
    last = start
    steps = itertools.count(first_step) if num_steps is None else range(
        first_step, first_step + num_steps)
    for i in steps:
        if i == trace_step:
            if before_trace is not None:
                before_trace()
                run(train_op)
            on_trace(i, run_traced(sess, train_op)[1])
            now = time.perf_counter()
            untimed += now - last
            last = now
        due = [o for o in observers if i % o.every == 0]
        if due:
            value, values = run([train_op, [o.fetches for o in due]])
            now = time.perf_counter()
            durations.append(now - last)
            for observer, observed in zip(due, values):
                observer.callback(i, durations, observed)
            now = time.perf_counter()  # observers are not charged to the next step
        else:
            value = run(train_op)
            now = time.perf_counter()
            durations.append(now - last)
        if on_step is not None and on_step(value):
            break
        last = time.perf_counter() if on_step is not None else now
    return timing.StepTimes(durations, time.perf_counter() - start - untimed, images_per_step)


def restore_latest(sess, saver, train_dir):
    """Restores the newest checkpoint in train_dir; returns its path, or None if there is none."""
    path = tf.train.latest_checkpoint(train_dir) if train_dir else None
    if path:
        saver.restore(sess, path)
    return path


def save(sess, saver, train_dir, global_step):
    """Writes a checkpoint `model.ckpt-<step>` to train_dir; returns its path."""
    os.makedirs(train_dir, exist_ok=True)
    return saver.save(sess, os.path.join(train_dir, 'model.ckpt'), global_step=global_step)

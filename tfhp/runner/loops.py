"""The runner's loops over a built graph: training (with checkpoints and evaluations between
chunks of timed steps), in-graph asynchronous training, evaluation and inference, input alone.

Each takes a session whose variables are initialised (or restored) and returns
(`timing.StepTimes` of the timed steps, {extra result figures}). Work that must not be charged
to a timed step (checkpoints, evaluations, traced or profiled steps) happens between chunks of
`session.run_steps`, or as extra steps before the first timed one.
"""
import time

import tensorflow.compat.v1 as tf

from tfhp.runner import async_runner
from tfhp import config as config_lib
from tfhp import session as session_lib
from tfhp import timing
from tfhp.profiling import capture
from tfhp.profiling import graphs
from tfhp.profiling import summaries
from tfhp.profiling import tfprof


def format_interval(step_index, durations, values, images_per_step, interval):
    """The progress line of the last `interval` timed steps."""
    recent = durations[-interval:]
    line = 'step %d\timages/sec: %.1f\tstep_time_ms: %.2f' % (
        step_index, images_per_step * len(recent) / sum(recent),
        1000.0 * sum(recent) / len(recent))
    if values is not None:
        # Before the loss, which parsers of these lines read at the end of the line.
        if 'learning_rate' in values:
            line += '\tlr: %.6g' % values['learning_rate']
        line += '\tloss: %.4f' % values['loss']
        if 'top1' in values:
            line += '\ttop_1: %.4f\ttop_5: %.4f' % (values['top1'], values['top5'])
    return line


def stops(num_steps, *intervals):
    """The step counts after which a chunk of timed steps ends: every multiple of each
    interval (None or 0: none) below num_steps, and num_steps itself."""
    ends = {num_steps}
    for interval in intervals:
        if interval:
            ends.update(range(interval, num_steps, interval))
    return sorted(ends)


def _due(done, interval, num_steps):
    return done == num_steps or bool(interval) and done % interval == 0


def _extra_steps(sess, train_op, profile, log):
    """The untimed steps after the warm-up that write the partition graphs and the tfprof
    profile, when asked for."""
    if profile.partitioned_graph_file_prefix:
        metadata = tf.RunMetadata()
        sess.run(train_op, options=tf.RunOptions(output_partition_graphs=True),
                 run_metadata=metadata)
        for path in graphs.write_partition_graphs(metadata,
                                                  profile.partitioned_graph_file_prefix):
            log('Wrote partitioned graph %s' % path)
    if profile.tfprof_file:
        costs = tfprof.profile_steps(sess, train_op, config_lib.PROFILED_STEPS,
                                     profile.tfprof_file)
        log('tfprof profile of %d extra steps: %s; costliest op types (ms over the steps):'
            % (config_lib.PROFILED_STEPS, profile.tfprof_file))
        for cost in costs:
            log('  %10.3f  %s (%d ops)' % (cost.exec_micros / 1000.0, cost.name, cost.num_ops))


def _trace_callback(sess, global_step, profile, writer, log):
    """The `on_trace` of the timed loop: writes the traced step's files (--trace_file) and,
    when summaries are written (`writer` not None), adds its RunMetadata to them; None when no
    step is traced."""
    if not profile.trace_file:
        return None
    callbacks = [capture.trace_writer(profile.trace_file, profile.trace_memory, log,
                                      chrome=profile.use_chrome_trace_format)]
    if writer is not None:
        # TensorBoard shows per-node time and memory only from RunMetadata in its events.
        callbacks.append(summaries.run_metadata_writer(writer,
                                                       lambda: int(sess.run(global_step))))

    def on_trace(step, run_metadata):
        for callback in callbacks:
            callback(step, run_metadata)
    return on_trace


def run_train(sess, built, cfg, log, evaluator=None):
    """Warm-up, then cfg.run.num_batches timed steps in chunks; between chunks checkpoints
    (--save_model_steps, and at the end) and evaluations (`evaluator`, every
    `evaluator.every` steps and at the end; training stops early once one reaches
    --stop_at_top_1_accuracy).

    Args:
      sess: the session.
      built: the `build.Built` training graph.
      cfg: the BenchmarkConfig.
      log: called with each line to print.
      evaluator: an `evaluation.DuringTraining`, or None.
    """
    ops, run_cfg, profile = built.ops, cfg.run, cfg.profile
    images_per_step = built.images_per_step
    session_lib.warm_up(sess, ops.warmup_ops)
    fetches = {'loss': ops.loss}
    if built.learning_rate is not None:
        fetches['learning_rate'] = built.learning_rate
    if run_cfg.print_training_accuracy:
        fetches.update(top1=ops.top1, top5=ops.top5)

    def on_interval(index, durations, values):
        log(format_interval(index, durations, values, images_per_step, run_cfg.display_every))

    observers = [session_lib.Observer(run_cfg.display_every, fetches, on_interval)]
    writer = None
    if built.summary_op is not None:
        writer = tf.summary.FileWriter(run_cfg.train_dir, sess.graph)
        observers.append(summaries.observer(built.summary_op, ops.global_step, writer,
                                            profile.save_summaries_steps, images_per_step))
    on_trace = _trace_callback(sess, ops.global_step, profile, writer, log)
    # Every fetch signature of the timed loop is run once here: the first run of a new
    # signature builds its executor, which must not be charged to a timed step.
    signatures = session_lib.step_fetches(ops.train_op, observers)
    for i in range(run_cfg.num_warmup_batches):
        sess.run(signatures[i + 1] if i + 1 < len(signatures) else ops.train_op)
    _extra_steps(sess, ops.train_op, profile, log)

    every_eval = evaluator.every if evaluator else None
    parts, done, saved, evaluations = [], 0, [], []
    for end in stops(run_cfg.num_batches, run_cfg.save_model_steps, every_eval):
        parts.append(session_lib.run_steps(
            sess, ops.train_op, end - done, images_per_step, observers, first_step=done + 1,
            trace_step=profile.trace_step if on_trace else None, on_trace=on_trace))
        done = end
        if run_cfg.train_dir and _due(done, run_cfg.save_model_steps, run_cfg.num_batches):
            saved.append(save(sess, built.saver, run_cfg.train_dir, ops.global_step, parts, log))
        if evaluator and _due(done, every_eval, run_cfg.num_batches):
            evaluations.append(evaluator.evaluate(sess, built.saver))
            if evaluator.reached(evaluations[-1]):
                log('Stopping: top-1 accuracy %.4f reached --stop_at_top_1_accuracy=%g'
                    % (evaluations[-1]['top_1_accuracy'], evaluator.target))
                break
    if writer is not None:
        writer.close()
    final = sess.run(fetches)
    extra = {'final_loss': float(final['loss']), 'global_step': int(sess.run(ops.global_step)),
             'checkpoints': saved}
    if built.learning_rate is not None:
        extra['learning_rate'] = float(final['learning_rate'])
    if evaluator:
        extra['evaluations'] = evaluations
    if run_cfg.print_training_accuracy:
        extra.update(train_top1=float(final['top1']), train_top5=float(final['top5']))
    return timing.StepTimes.concat(parts), extra


def run_input_only(sess, ops, run_cfg):
    """Times the input pipeline alone: batches delivered to every tower, no model."""
    session_lib.warm_up(sess, ops.warmup_ops)
    for _ in range(run_cfg.num_warmup_batches):
        sess.run(ops.train_op)
    return session_lib.run_steps(sess, ops.train_op, run_cfg.num_batches,
                                 ops.images_per_step), {}


def save(sess, saver, train_dir, global_step, parts, log):
    """Writes a checkpoint; returns [its global step, timed seconds of the `parts` so far]."""
    log('Saved %s' % session_lib.save(sess, saver, train_dir, global_step))
    return [int(sess.run(global_step)), sum(p.wall_time for p in parts)]


def run_async(sess, built, run_cfg, log, solo_steps):
    """In-graph asynchronous training: every replica steps in its own thread, after replica 0
    trained alone for `solo_steps` timed steps (--async_warmup_steps). Checkpoints are
    written between chunks of --save_model_steps steps per replica."""
    ops = built.ops
    session_lib.warm_up(sess, ops.warmup_ops)
    parts = [async_runner.run_replicas(sess, built.replica_train_ops[:1], solo_steps,
                                       built.batch_size)[0]] if solo_steps else []
    chunk = run_cfg.save_model_steps or run_cfg.num_batches
    chunks, saved, done = [], [], 0
    while done < run_cfg.num_batches:
        count = min(chunk, run_cfg.num_batches - done)
        chunks.append(async_runner.run_replicas(
            sess, built.replica_train_ops, count, built.batch_size,
            num_warmup=0 if done else run_cfg.num_warmup_batches))
        parts.append(chunks[-1][0])
        done += count
        if run_cfg.train_dir:
            saved.append(save(sess, built.saver, run_cfg.train_dir, ops.global_step, parts,
                              log))
    per_replica = [timing.StepTimes.concat(r) for r in zip(*[c[1] for c in chunks])]
    for t, replica in enumerate(per_replica):
        log('replica %d: %d steps  images/sec: %.1f' % (t, replica.num_steps,
                                                        replica.images_per_sec))
    extra = {'final_loss': float(sess.run(ops.loss)),
             'global_step': int(sess.run(ops.global_step)), 'checkpoints': saved,
             'replica_steps': [r.num_steps for r in per_replica],
             'replica_images_per_sec': [r.images_per_sec for r in per_replica]}
    return timing.StepTimes.concat(parts), extra


def run_eval(sess, ops, num_batches, log, num_warmup=0, accuracy=True):
    """Evaluation (or inference) steps: forward passes over `num_batches` batches.

    Args:
      sess: a session whose input stages are warmed up.
      ops: `step.EvalOps`.
      num_batches: timed steps.
      log: called with each line to print.
      num_warmup: untimed steps first (their hits are not counted).
      accuracy: report top-1/top-5 (False: inference, --forward_only).
    Returns:
      (StepTimes, extra): extra holds top_1_accuracy and top_5_accuracy when `accuracy`, and
      the global step of the weights.
    """
    fetches = [ops.top1_correct, ops.top5_correct, ops.put_ops]
    for _ in range(num_warmup):
        sess.run(fetches)
    counts = {'top1': 0.0, 'top5': 0.0}
    durations = []
    start = time.perf_counter()
    for _ in range(num_batches):
        begin = time.perf_counter()
        top1, top5, _ = sess.run(fetches)
        durations.append(time.perf_counter() - begin)
        counts['top1'] += float(top1)
        counts['top5'] += float(top5)
    times = timing.StepTimes(durations, time.perf_counter() - start, ops.num_images)
    extra = {'global_step': int(sess.run(tf.train.get_global_step(sess.graph)))}
    if accuracy:
        total = ops.num_images * num_batches
        extra.update(top_1_accuracy=counts['top1'] / total,
                     top_5_accuracy=counts['top5'] / total)
        log('Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [%d examples]'
            % (extra['top_1_accuracy'], extra['top_5_accuracy'], total))
    return times, extra

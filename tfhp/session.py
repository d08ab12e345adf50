"""Sessions: their ConfigProto, staging warm-up, the timed step loop and checkpoints."""
import os
import time

import tensorflow.compat.v1 as tf

from tfhp import timing


def config_proto(num_cpu_devices=1, num_intra_threads=0, num_inter_threads=0,
                 allow_soft_placement=False):
    """A ConfigProto with `num_cpu_devices` virtual CPU devices and the given thread pools.

    Soft placement is off by default so that an op that cannot run where tfhp put it fails
    loudly instead of moving silently (which would falsify a measurement).
    """
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


def run_steps(sess, train_op, num_steps, images_per_step, interval=0, interval_fetches=None,
              on_interval=None):
    """Runs `train_op` num_steps times and returns their `timing.StepTimes`.

    The loop is kept lean (one `session.run` and one clock read per step) so that its figures
    match a bare `for: sess.run(train_op)` loop; extra fetches happen only every `interval` steps.

    Args:
      sess: a session.
      train_op: the op run every step.
      num_steps: how many steps.
      images_per_step: the global batch size.
      interval: every this many steps also fetch `interval_fetches` and call on_interval; 0 never.
      interval_fetches: fetched with train_op on interval steps.
      on_interval: on_interval(step, durations_so_far, fetched_values).
    Returns:
      A `timing.StepTimes`.
    """
    durations = []
    start = time.perf_counter()
    last = start
    for i in range(1, num_steps + 1):
        if interval and i % interval == 0:
            values = sess.run([train_op, interval_fetches])[1]
            now = time.perf_counter()
            durations.append(now - last)
            if on_interval is not None:
                on_interval(i, durations, values)
            now = time.perf_counter()  # printing is not charged to the next step
        else:
            sess.run(train_op)
            now = time.perf_counter()
            durations.append(now - last)
        last = now
    return timing.StepTimes(durations, time.perf_counter() - start, images_per_step)


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

"""A between-graph worker timing inference (--forward_only) on the ps tasks' variables.

Each worker builds the forward step (`step.build_eval_step`, through `build.build`) against
the variables where the ps tasks hold them, whatever strategy trains them
(`replication.make_variable_manager(trains=False)`). The chief initialises them, or restores
--train_dir's latest checkpoint; the others wait for that, bounded by --peer_timeout_s. Then each
worker on its own warms up its input staging, runs --num_warmup_batches untimed and
--num_batches timed forward steps, and ends: nothing moves the variables or the global step, so
there is no sync protocol and no common end. A stop signal ends this worker after its step.

Its result is a training worker's (`tfhp.runner.results.Worker`): the wall-clock end of every timed
step, from which the launcher computes the job's images/sec, and a checksum of the variables it
read, equal on every worker (each read the chief's weights, not weights of its own).
"""
import time

import tensorflow.compat.v1 as tf

from tfhp.runner import build
from tfhp.runner import results
from tfhp import session as session_lib
from tfhp import startup
from tfhp.cluster import bounded_steps
from tfhp.cluster import servers
from tfhp.cluster import task as task_lib
from tfhp.cluster import task_session


def run(cfg, log, stop, task, proto, topology, events):
    """Runs this worker's inference (see the module doc); returns its result dict.

    Args:
      cfg: the worker's BenchmarkConfig (cfg.run.forward_only).
      log: called with each line to print.
      stop: the process's `signals.StopSignals`.
      task: its started `task.Task`.
      proto: its server's ConfigProto.
      topology: its `Topology.between_graph`.
      events: its `events.EventLog`.
    """
    cluster, index, dog = cfg.cluster, cfg.cluster.task_index, task.dog
    built = build.build(cfg, topology, finalize=False)
    with built.graph.as_default():
        variables = tf.trainable_variables()
        checksum = tf.add_n([tf.reduce_sum(tf.cast(v, tf.float64)) for v in variables])
        global_step = tf.train.get_global_step()
    startup.mark('graph')
    log('worker %d: forward only, %d tower(s), batch %d per tower, %d trainable parameters'
        % (index, topology.num_towers, built.batch_size, built.num_params))
    sess, session_start, ready_time = task_lib.open_session(
        task, built, cluster, cfg.run.train_dir,
        task_session.session_config(proto, ['/job:ps', '/job:worker/task:%d' % index]), [],
        topology.is_chief, topology.is_chief, events)
    timeout = tf.RunOptions(timeout_in_ms=int(cluster.step_timeout_s * 1000))
    dog.phase('the staging warm-up', cluster.step_timeout_s + cluster.peer_timeout_s)
    if built.post_init_ops:
        sess.run(built.post_init_ops, options=timeout)
    session_lib.warm_up(sess, built.ops.warmup_ops)
    warm_ends, timed_start, ends, times = _forward_steps(sess, built, cfg, stop, dog)
    dog.phase('reading the final figures', cluster.peer_timeout_s)
    step, total = sess.run([global_step, checksum], options=timeout)
    sess.close()
    dog.phase('signalling done to the serving tasks', cluster.peer_timeout_s)
    for job, task_index in servers.signal_done(task.server.target, cluster,
                                               task_lib.serving_tasks(cluster), index):
        log('worker %d: could not tell %s task %d it is done' % (index, job, task_index))
    dog.phase('writing the result', None)
    worker = results.Worker(
        warmup_steps=len(warm_ends),
        images=times.num_steps * built.images_per_step if times else 0, dropped_images=0,
        warmup_dropped_images=0, session_start_time=session_start,
        session_ready_time=ready_time, first_step_time=(warm_ends + ends or [None])[0],
        timed_start_time=timed_start, end_times=ends,
        global_steps=[int(step)] * len(ends), start_global_step=int(step),
        global_steps_per_sec=0.0, variables_checksum=float(total),
        variable_bytes_by_device=task_lib.bytes_by_device(variables), stopped_by=stop.signum,
        startup_times=dict(startup.MARKS), events=events.events)
    result = results.record(cfg, built, times, outcome=results.Outcome(global_step=int(step)),
                            counters=results.Counters(), worker=worker)
    if times:
        log('worker %d: %d timed forward steps, images/sec: %.2f (weights of global step %d)'
            % (index, times.num_steps, times.images_per_sec, step))
    return results.write(cfg, result)


def _forward_steps(sess, built, cfg, stop, dog):
    """Warm-up then timed forward steps, each bounded; a stop signal ends them after a step.

    Returns:
      (the warm-up steps' end times, the timed steps' start time, their end times, their
      `timing.StepTimes` or None when a stop came first).
    """
    fetch = [built.ops.top1_correct, built.ops.put_ops]
    cluster = cfg.cluster

    def steps(num_steps, what):
        ends = []

        def on_step(value):
            del value
            ends.append(time.time())
            return stop.requested
        times = session_lib.run_steps(sess, fetch, num_steps, built.images_per_step,
                                      run=bounded_steps.step_runner(sess, cluster, dog, what),
                                      on_step=on_step)
        return ends, times

    warm_ends = steps(cfg.run.num_warmup_batches, 'warm-up step')[0] if (
        cfg.run.num_warmup_batches) else []
    timed_start = time.time()
    if stop.requested:
        return warm_ends, timed_start, [], None
    ends, times = steps(cfg.run.num_batches, 'step')
    return warm_ends, timed_start, ends, times

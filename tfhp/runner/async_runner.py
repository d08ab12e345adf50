"""In-graph asynchronous training: one replica per tower, each stepped by its own thread.

Each tower becomes a replica with its own step: its input, forward and backward pass, and its
own optimizer's update of the shared parameter-server variables, which increments global_step
once per replica update. The replicas are built by the ordinary step builder
(`tfhp.runner.step.build_train_step`) on a one-tower view of the topology, under name scopes
`replica_<t>/`. Nothing makes one replica wait for another: a replica's gradient may be computed
on weights other replicas have changed since, and updates of different variables interleave
(no cross-variable atomicity, as in asynchronous parameter-server training). So the manager
must measure each update's gradient staleness (a `staleness.Staleness`, e.g. an
`AsyncReplicas`); another is refused, since results without staleness cannot be read.

`run_replicas` protocol:
  1. every thread runs its untimed warm-up steps;
  2. all threads and the caller meet at a barrier (bounded wait); the clock starts;
  3. each thread runs its timed steps with its own `session.run` calls, timing each;
  4. the wall time runs from the barrier to the end of the last thread.
A thread that fails breaks the barrier, and its error is raised in the caller once every
thread has ended (each runs a bounded number of steps, so all of them end).
"""
import dataclasses
import threading
import time

import tensorflow.compat.v1 as tf

from tfhp.runner import step as step_lib
from tfhp import timing
from tfhp.replication import base
from tfhp.replication import staleness


class _ReplicaView(base.VariableManager):
    """`manager` as seen by a one-tower step builder building tower `tower`."""

    def __init__(self, manager, tower):
        self._manager = manager
        self._tower = tower

    def tower_scope(self, tower):
        del tower  # always 0 for a one-tower builder
        return self._manager.tower_scope(self._tower)

    def trainable_variables(self, tower):
        del tower
        return self._manager.trainable_variables(self._tower)

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        return self._manager.apply_gradients(tower_grads, optimizer_fn, global_step)


def _merge_warmups(replica_ops):
    depth = max(len(ops.warmup_ops) for ops in replica_ops)
    return [tf.group(*[ops.warmup_ops[k] for ops in replica_ops if k < len(ops.warmup_ops)])
            for k in range(depth)]


def build_replica_steps(pipeline, model_fn, manager, optimizer_fn, topology, **step_kwargs):
    """Builds one independent training step per tower.

    Args:
      pipeline: a `tfhp.pipelines.base.Pipeline`; each replica builds its own input from it.
      model_fn: as for `step.build_train_step`.
      manager: a `staleness.Staleness` whose towers share variables (over a
        ParameterServer, or an `AsyncReplicas`); each replica's `apply_gradients` call applies
        that replica's gradients alone and measures their staleness.
      optimizer_fn: called once per replica: each has its own optimizer (and slots).
      topology: a `tfhp.topology.Topology`; one replica per tower device.
      **step_kwargs: passed to `step.build_train_step` (weight_decay, gradient_clip).
    Returns:
      (combined, replica_train_ops): `combined` is a `step.StepOps` whose loss/top1/top5 are
      the replicas' means, whose warm-up runs every replica's warm-up, and whose train_op
      steps every replica once; replica_train_ops[t] is replica t's own train op.
    Raises:
      ValueError: the manager does not measure staleness.
    """
    if not isinstance(manager, staleness.Staleness):
        raise ValueError(
            'asynchronous replicas need a manager that measures gradient staleness, not %s: '
            'use replication.async_replicas.AsyncReplicas(placement, worker_device) or wrap it '
            'in replication.staleness.Staleness(manager, counter_device)'
            % type(manager).__name__)
    replicas = []
    for t, device in enumerate(topology.tower_devices):
        view = dataclasses.replace(topology, tower_devices=(device,))
        with tf.name_scope('replica_%d' % t):
            replicas.append(step_lib.build_train_step(
                pipeline, model_fn, _ReplicaView(manager, t), optimizer_fn, view,
                **step_kwargs))
    train_ops = [ops.train_op for ops in replicas]
    combined = step_lib.StepOps(
        train_op=tf.group(*train_ops, name='all_replicas_train_op'),
        loss=tf.reduce_mean([ops.loss for ops in replicas], name='mean_replica_loss'),
        top1=tf.reduce_mean([ops.top1 for ops in replicas]),
        top5=tf.reduce_mean([ops.top5 for ops in replicas]),
        warmup_ops=_merge_warmups(replicas),
        post_init_ops=list(manager.post_init_ops()),
        hooks=[h for ops in replicas for h in ops.hooks],
        global_step=replicas[0].global_step)
    return combined, train_ops


def run_replicas(sess, train_ops, num_steps, images_per_step, num_warmup=0,
                 start_timeout_s=600.0):
    """Runs each train op in its own thread, num_steps timed steps each (see module doc).

    Args:
      sess: a session shared by the threads.
      train_ops: one train op per replica.
      num_steps: timed steps per replica.
      images_per_step: images one replica step consumes.
      num_warmup: untimed steps per replica before the clock starts.
      start_timeout_s: bound on waiting at the start barrier (warm-up included).
    Returns:
      (total, per_replica): `timing.StepTimes` over every replica's steps and the common wall
      time, and a list with each replica's own StepTimes (wall time to its own end).
    Raises:
      Whatever a replica's session.run raised (the first, by replica index).
    """
    count = len(train_ops)
    started = []
    barrier = threading.Barrier(count + 1, action=lambda: started.append(time.perf_counter()),
                                timeout=start_timeout_s)
    durations = [[] for _ in range(count)]
    ends = [None] * count
    errors = [None] * count

    def replica(index):
        try:
            for _ in range(num_warmup):
                sess.run(train_ops[index])
            barrier.wait()
            last = time.perf_counter()
            for _ in range(num_steps):
                sess.run(train_ops[index])
                now = time.perf_counter()
                durations[index].append(now - last)
                last = now
            ends[index] = last
        except threading.BrokenBarrierError:
            pass  # another replica failed or the start timed out: the caller reports it
        except Exception as e:  # pylint: disable=broad-except
            errors[index] = e
            barrier.abort()

    threads = [threading.Thread(target=replica, args=(i,), name='replica_%d' % i, daemon=True)
               for i in range(count)]
    for thread in threads:
        thread.start()
    try:
        barrier.wait()
    except threading.BrokenBarrierError:
        pass  # reported below, once every thread has ended
    for thread in threads:
        thread.join()
    failed = [e for e in errors if e is not None]
    if failed:
        raise failed[0]
    if not started or any(end is None for end in ends):
        raise TimeoutError('replica threads did not all reach the start barrier within %.0f s'
                           % start_timeout_s)
    start = started[0]
    per_replica = [timing.StepTimes(d, end - start, images_per_step)
                   for d, end in zip(durations, ends)]
    total = timing.StepTimes([x for d in durations for x in d], max(ends) - start,
                             images_per_step)
    return total, per_replica

"""Gradient staleness, measured where updates are applied, and the remedies for it.

The staleness of an update is the number of updates applied between its replica's read of the
weights and the apply of its gradient. Every manager increments global_step once per update, so
two reads of global_step measure it. `Staleness` wraps the manager of one graph; it sees each
update as the towers built since the previous `apply_gradients` (one replica's step):

  1. The first tower scope after an update reads global_step (`read`); every op of the
     replica's towers, every weight read included, runs after that read (a control
     dependency).
  2. Once every gradient of the update is ready, global_step is read again (`now`) and
     staleness = now - read: the updates other replicas applied meanwhile. Weights read late in
     the forward pass may already hold some of them, so it is an upper bound, by at most the
     updates that land while the replica reads its weights.
  3. Remedies scale the gradients: by 0 when staleness > max_staleness (the gradient is
     dropped and counted), and/or by 1/staleness (staleness 0 and 1 are not scaled).
  4. The counts (updates, sum, max and histogram of staleness, dropped gradients) are added to local
     variables on `counter_device` with atomic updates (in-graph replica threads share them);
     only then does the wrapped manager apply the gradients and increment global_step.

A dropped gradient is applied as zeros, so it still increments global_step: with SGD nothing
moves; with momentum the velocity still moves the weights. In a synchronous in-graph step no
other update can land between 1 and 2: staleness is 0 (what `measure_staleness` shows).

Warm-up: with `join_after_step`, a replica that is not the first waits before its first step
until global_step reaches that step (a session hook, for between-graph workers; the in-graph
runner starts the other replicas' threads later instead).
"""
import contextlib
import time

import tensorflow.compat.v1 as tf

from tfhp import counts
from tfhp.ops import scopes
from tfhp.replication import base

# The counters' names and histogram bins (their arithmetic is in `tfhp.counts`).
COUNT, SUM, MAX, DROPPED, HISTOGRAM, BINS = (
    counts.COUNT, counts.SUM, counts.MAX, counts.DROPPED, counts.HISTOGRAM, counts.BINS)
summary = counts.summary


def _scaled(grad, factor):
    """grad * factor, dense or sparse; made in the caller's control dependencies."""
    if factor is None:
        return base.map_values(grad, tf.identity)
    return base.map_values(grad, lambda values: values * tf.cast(factor, values.dtype))


class JoinAfterStepHook(tf.train.SessionRunHook):
    """Holds a replica back, before its first step, until global_step reaches `step`.

    Args:
      global_step: the global step variable.
      step: the global step the replica waits for.
      timeout_s: bound on the wait; TimeoutError after it.
      poll_s: seconds between reads of global_step.
    """

    def __init__(self, global_step, step, timeout_s, poll_s=0.05):
        with tf.control_dependencies(None):
            self._read = global_step.read_value()
        self._step = step
        self._timeout_s = timeout_s
        self._poll_s = poll_s

    def after_create_session(self, session, coord):
        deadline = time.monotonic() + self._timeout_s
        while True:
            current = session.run(self._read)
            if current >= self._step:
                return
            if time.monotonic() > deadline:
                raise TimeoutError('waited %.0f s for the first replica\'s %d warm-up steps '
                                   '(--async_warmup_steps); global step is %d'
                                   % (self._timeout_s, self._step, current))
            time.sleep(self._poll_s)


class Staleness(base.VariableManager):
    """Measures the staleness of every update of `inner` and applies the remedies.

    Args:
      inner: the wrapped manager (it places variables and applies the gradients).
      counter_device: where the counters live (this process's CPU).
      max_staleness: drop gradients older than this many updates; None keeps every one.
      scale_by_staleness: scale each gradient by 1/staleness.
      join_after_step: a replica that is not the first waits until global_step reaches this
        step before its first step (0: no wait).
      join_timeout_s: bound on that wait.
    """

    def __init__(self, inner, counter_device, max_staleness=None, scale_by_staleness=False,
                 join_after_step=0, join_timeout_s=600.0):
        self._inner = inner
        self._device = counter_device
        self._max_staleness = max_staleness
        self._scale = scale_by_staleness
        self._join_after_step = join_after_step
        self._join_timeout_s = join_timeout_s
        self._read = None      # this update's read of global_step, until apply_gradients
        self._counters = None  # {name: local variable}, made by the first update
        self._values = {}      # {name: scalar read of the counter}
        self.step_reads = []   # every update's read of global_step (a test feeds older ones)

    @contextlib.contextmanager
    def tower_scope(self, tower):
        if self._read is None:
            global_step = tf.train.get_global_step()
            if global_step is None:
                raise ValueError('Staleness reads global_step: create it before the towers')
            with tf.device(global_step.device), tf.name_scope(scopes.AGGREGATE):
                self._read = tf.identity(global_step.read_value(), name='staleness_read_step')
            self.step_reads.append(self._read)
        with self._inner.tower_scope(tower), tf.control_dependencies([self._read]):
            yield

    def trainable_variables(self, tower):
        return self._inner.trainable_variables(tower)

    def post_init_ops(self):
        return self._inner.post_init_ops()

    def savable_variables(self):
        return self._inner.savable_variables()

    def counters(self):
        """{name: tensor} of the staleness counts (scalars; the histogram a [BINS] vector) and
        the wrapped manager's counters.

        The tensors are made with the first update, so this makes no op (it can be called on a
        finalized graph).
        """
        return dict(self._inner.counters(), **self._values)

    def _make_counters(self):
        with tf.device(self._device), tf.control_dependencies(None), tf.name_scope(None):
            self._counters = {name: tf.Variable(tf.zeros(shape, tf.int64), trainable=False,
                                                collections=[tf.GraphKeys.LOCAL_VARIABLES],
                                                name=name)
                              # The max is a 1-element vector: scatter_max updates it atomically.
                              for name, shape in ((COUNT, []), (SUM, []), (MAX, [1]),
                                                  (DROPPED, []), (HISTOGRAM, [BINS]))}
            self._values = {name: v.read_value() if name == HISTOGRAM else
                            tf.reshape(v.read_value(), [])
                            for name, v in self._counters.items()}

    def _remedy(self, staleness):
        """(gradient factor or None, dropped flag) for this update's staleness."""
        factor, dropped = None, tf.constant(False)
        if self._scale:
            factor = 1.0 / tf.maximum(tf.cast(staleness, tf.float32), 1.0)
        if self._max_staleness is not None:
            dropped = staleness > self._max_staleness
            keep = tf.cast(tf.logical_not(dropped), tf.float32)
            factor = keep if factor is None else factor * keep
        return factor, dropped

    def _record(self, staleness, dropped):
        c = self._counters
        return tf.group(
            c[COUNT].assign_add(tf.constant(1, tf.int64), read_value=False),
            c[SUM].assign_add(staleness, read_value=False),
            c[MAX].scatter_max(tf.IndexedSlices(tf.reshape(staleness, [1]), tf.constant([0]))),
            c[DROPPED].assign_add(tf.cast(dropped, tf.int64), read_value=False),
            c[HISTOGRAM].scatter_add(tf.IndexedSlices(
                tf.ones([1], tf.int64),
                tf.reshape(tf.cast(tf.minimum(staleness, BINS - 1), tf.int32), [1]))))

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        read, self._read = self._read, None
        if read is None:
            raise ValueError('apply_gradients before any tower_scope: nothing read the weights')
        if self._counters is None:
            self._make_counters()
        ready = [g.values if isinstance(g, tf.IndexedSlices) else g
                 for tower in tower_grads for g, _ in tower if g is not None]
        with tf.name_scope(scopes.AGGREGATE), tf.name_scope('staleness'):
            with tf.device(global_step.device), tf.control_dependencies(ready):
                now = tf.identity(global_step.read_value(), name='apply_step')
            with tf.device(self._device):
                staleness = tf.cast(now - read, tf.int64, name='staleness')
                factor, dropped = self._remedy(staleness)
                record = self._record(staleness, dropped)
            # The wrapped manager applies only once the counts (and so `now`) are taken.
            with tf.control_dependencies([record]):
                tower_grads = [[(_scaled(g, factor), v) for g, v in tower]
                               for tower in tower_grads]
        update = self._inner.apply_gradients(tower_grads, optimizer_fn, global_step)
        hooks = list(update.hooks)
        if self._join_after_step:
            hooks.append(JoinAfterStepHook(global_step, self._join_after_step,
                                           self._join_timeout_s))
        return update._replace(hooks=hooks)

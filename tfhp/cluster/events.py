"""The cluster events a task sees, one line each as they happen, and kept for its result.

Events: a peer stopped answering, answers again or rejoined (`liveness.PeerWatch`), a
checkpoint saved (with its global step) or restored, the step at which the job was asked to
stop. The worker's result carries them (`results.Worker.events`), so the job's JSON says what
happened to the cluster without reading every task's log.
"""
import threading
import time

import tensorflow.compat.v1 as tf


class EventLog:
    """Prints each event as '<task>: <event>' and keeps [{'time': epoch s, 'event': text}].

    Args:
      task: how lines name this task, e.g. 'worker 0'.
      log: called with each line.
      clock: epoch seconds.
    """

    def __init__(self, task, log, clock=time.time):
        self._task = task
        self._log = log
        self._clock = clock
        self._lock = threading.Lock()
        self.events = []

    def note(self, event):
        """Records and prints one event (from any thread)."""
        with self._lock:
            self.events.append({'time': self._clock(), 'event': event})
        self._log('%s: %s' % (self._task, event))


class CheckpointEvents(tf.train.CheckpointSaverListener):
    """Notes each checkpoint a `CheckpointSaverHook` writes, with its global step."""

    def __init__(self, events):
        self._events = events

    def after_save(self, session, global_step_value):
        self._events.note('saved a checkpoint at global step %d' % global_step_value)

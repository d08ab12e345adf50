"""Priority pushes: a worker's gradients leave in the order the forward pass uses their
variables, among those already made (P3's and ByteScheduler's priority).

With background pulls the next forward pass starts on its first layers as soon as their weights
are back. Backprop makes those layers' gradients last, and the pipelined transfer's static chain
sends them last too: behind every chunk made before them that the link has not yet carried.
Here (`--ps_transfer=priority`) a gradient, once made, is copied into a buffer of the worker's and
its index put into its ps task's *ready queue* (`_Ready`), ranked by its variable's place in the
forward order (the order the variables are created). Sender threads of the worker (`Sender`,
several per ps task) take, one at a time and once the task's window of bytes on the way has room
(`--ps_window_bytes`), the first index of the queue, whichever gradients are ready, and push
that buffer to its accumulator, tagged with the step it was made at (buffered beside it); so a
first layer's gradient passes the later layers' chunks still waiting. The ready queue is
Python's, filled by the step graph through a `numpy_function`: taking from it costs no run of
the distributed runtime (a run costs about a millisecond of CPU, and, between two pushes, of
the link's time), and a push, which is fed nothing, is run by a callable (`RunInLoops`).

The step ends once its gradients are queued (`transfers.Priority`), so the next forward pass
starts on the first layers while the later chunks still travel. With fusion bytes
(`--ps_group_bytes`) a ps task's consecutive small gradients go as one group: one queue
element and one push run, since each run costs both tasks' runtimes CPU whatever it carries. A
buffer is overwritten only by the next step's gradient, which backprop makes after that step's
forward pass read every variable, each read waiting for its variable's pull of this step: after
every push of this one was applied.
"""
import heapq
import threading

import numpy as np
import tensorflow.compat.v1 as tf

from tfhp.ops import session_hooks

PRIORITY_QUEUE = 'tfhp_push_priority'
# Senders per ps task: enough for the small gradients (biases, batch norms) that fit a window
# beside a large one, each push run waiting for its receipt.
SENDERS_PER_TASK = 32
# How often a sender waiting for a gradient checks whether its session is stopping.
_STOP_POLL_S = 0.05


class _Ready:
    """One ps task's made gradients (or groups) not pushed yet: their priorities, least first.

    The step graph puts (`put`, in a numpy_function); senders take in Python. A session's
    loops `open` it: what an earlier session left (a step cut short) is dropped, and that
    session's senders end.
    """

    def __init__(self):
        self._heap = []
        self._changed = threading.Condition()
        self._session, self._coord = None, None

    def open(self, session, coord):
        """Serves `session` (its loops stop with `coord`) from now on."""
        with self._changed:
            if session is not self._session:
                self._heap, self._session, self._coord = [], session, coord
                self._changed.notify_all()

    def put(self, priority):
        """Queues priority; returns it (the numpy_function's output)."""
        with self._changed:
            heapq.heappush(self._heap, int(priority))
            self._changed.notify()
        return np.int64(priority)

    def take(self, session):
        """The least priority queued, blocking until there is one; raises
        RuntimeError, which ends a loop, once `session` is not served or is stopping."""
        with self._changed:
            if self._session is None:
                raise ValueError('priority pushes: no session served yet; a RunInLoops hook '
                                 'starts each Sender (Sender.start) before its turns')
            while True:
                if session is not self._session or self._coord.should_stop():
                    raise RuntimeError('priority pushes: the session is done')
                if self._heap:
                    return heapq.heappop(self._heap)
                self._changed.wait(_STOP_POLL_S)


class _Credit:
    """The bytes on the way to one ps task, bounded by a window; its senders choose in turn."""

    def __init__(self, window_bytes):
        self._window_bytes = window_bytes
        self._changed = threading.Condition()
        self._in_flight = 0
        self.choosing = threading.Lock()  # held from waiting for room to taking a gradient

    def wait_for_room(self):
        """Blocks while the window is full (window 0: while anything is on the way)."""
        with self._changed:
            while self._in_flight and self._in_flight >= self._window_bytes:
                self._changed.wait()

    def add(self, num_bytes):
        with self._changed:
            self._in_flight += num_bytes
            self._changed.notify_all()


class Sender(session_hooks.Loop):
    """A loop's turn: once its ps task's window has room, take the first gradient (or group)
    of the task's ready queue (blocking until one is made) and push it; one of several per task,
    so that small gradients go beside a large one still on the way."""

    def __init__(self, name, credit, ready, pushes, num_bytes):
        self.name = name
        self._credit = credit
        self._ready = ready
        self._pushes = pushes
        self._num_bytes = num_bytes

    def start(self, session, coord):
        self._ready.open(session, coord)

    def __call__(self, session, traced_run):
        # The choice is made as late as it can be: once there is room, by one sender at a time.
        with self._credit.choosing:
            self._credit.wait_for_room()
            index = self._ready.take(session)
            self._credit.add(self._num_bytes[index])
        try:
            traced_run(self._pushes[index])
        finally:
            self._credit.add(-self._num_bytes[index])


def _groups(sizes_and_tasks, fusion_bytes):
    """The gradients' push groups: lists of indices, in order of their first. Consecutive
    gradients of one ps task (in forward order) each under fusion_bytes share a group of at
    most fusion_bytes; every other gradient is a group of its own."""
    groups, open_group = [], {}  # task -> (its group being filled, the group's bytes)
    for i, (size, task) in enumerate(sizes_and_tasks):
        group, group_bytes = open_group.get(task, (None, 0))
        if size >= fusion_bytes:
            groups.append([i])
            open_group.pop(task, None)  # a large gradient ends the run of small ones
        elif group is not None and group_bytes + size <= fusion_bytes:
            group.append(i)
            open_group[task] = (group, group_bytes + size)
        else:
            groups.append([i])
            open_group[task] = (groups[-1], size)
    return groups


def build(grads_and_vars, tag, worker_device, push, window_bytes=0,
          senders_per_task=SENDERS_PER_TASK, fusion_bytes=0):
    """Priority pushes of this worker's gradients.

    Args:
      grads_and_vars: [(gradient or compressed payload, variable)] in forward order (the
        priority: earlier first); each payload's tensors of fully defined shapes.
      tag: the step the gradients were computed at (int64 scalar).
      worker_device: this worker's CPU: the buffers.
      push: push(i, payload, tag) -> the op applying gradient i's payload, tagged `tag`, to its
        accumulator on the variable's ps task.
      window_bytes: bytes of pushes on the way to each ps task at once; 0 (or a push larger
        than it): one at a time.
      senders_per_task: sender threads per ps task: at most this many pushes on the way.
      fusion_bytes: N > 0: consecutive gradients of a ps task each under N bytes are queued
        and pushed together, in groups of at most N bytes: one queue element and one push run
        a group (each run costs both tasks' runtimes about a millisecond of CPU), ranked by
        its first gradient and queued once all of its gradients are made; 0: each gradient
        alone.
    Returns:
      (ops, one a group, each queueing its group once its gradients are made, in the order of
      their first gradients; the `Sender` loops, for a `RunInLoops` hook).
    """
    for grad, var in grads_and_vars:
        if isinstance(grad, tf.IndexedSlices):
            raise ValueError('priority pushes buffer dense gradients; %s has a sparse one'
                             % var.op.name)
        for part in tf.nest.flatten(grad):
            if not part.shape.is_fully_defined():
                raise ValueError('priority pushes buffer gradients of fixed shapes; %s '
                                 'sends one of shape %s' % (var.op.name, part.shape))
    sizes = [sum(p.shape.num_elements() * p.dtype.size for p in tf.nest.flatten(grad))
             for grad, _ in grads_and_vars]
    ready, pushes, num_bytes, queued = {}, {}, {}, []
    tasks = [var.device for _, var in grads_and_vars]
    for group in _groups(list(zip(sizes, tasks)), fusion_bytes):
        first, task = group[0], tasks[group[0]]
        with tf.device(worker_device), tf.name_scope('%s/%d' % (PRIORITY_QUEUE, first)):
            if task not in ready:
                ready[task], pushes[task], num_bytes[task] = _Ready(), {}, {}
            copies, payloads = [], []
            for i in group:
                parts = tf.nest.flatten(grads_and_vars[i][0])
                buffers = [tf.Variable(tf.zeros(part.shape, part.dtype), trainable=False,
                                       collections=[tf.GraphKeys.LOCAL_VARIABLES],
                                       name='buffer') for part in parts]
                copies += [b.assign(part, read_value=False) for b, part in zip(buffers, parts)]
                payloads.append(tf.nest.pack_sequence_as(grads_and_vars[i][0],
                                                         [b.read_value() for b in buffers]))
            tag_buffer = tf.Variable(tf.zeros([], tf.int64), trainable=False,
                                     collections=[tf.GraphKeys.LOCAL_VARIABLES], name='tag')
            copies.append(tag_buffer.assign(tag, read_value=False))
            with tf.control_dependencies(copies):
                # Stateful: run once a step, never folded or pruned away.
                queued.append(tf.numpy_function(
                    ready[task].put, [tf.constant(first, tf.int64)], tf.int64, stateful=True,
                    name='ready'))
            buffered_tag = tag_buffer.read_value()
        sends = [push(i, payload, buffered_tag) for i, payload in zip(group, payloads)]
        pushes[task][first] = sends[0] if len(sends) == 1 else tf.group(*sends)
        num_bytes[task][first] = sum(sizes[i] for i in group)
    senders = []
    for k, (task, task_ready) in enumerate(ready.items()):
        credit = _Credit(window_bytes)
        senders += [Sender('%s/task_%d/sender_%d' % (PRIORITY_QUEUE, k, s), credit, task_ready,
                           pushes[task], num_bytes[task])
                    for s in range(senders_per_task)]
    return queued, senders

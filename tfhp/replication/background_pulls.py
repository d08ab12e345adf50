"""Background pulls: the next forward pass starts on the variables already back (P3's order).

In the pipelined push-pull (`--ps_transfer=pipelined`) a worker's step ends with its last pull, so
the next forward pass waits for every chunk and the compute adds to the transfer (lenet at
1 Gbit/s: 1.47-1.50 times max(compute, communication)). With background pulls
(`--ps_transfer=background`, `transfers.Background`):
  - the step ends once the chief has applied it (a token of the global step's), not after the
    last pull, and each gradient leaves as soon as it exists;
  - a thread of the worker (`SyncReplicas`'s hook) pulls each variable, or chunk, as soon as
    the chief releases it, in runs of its own, and then puts the step it now holds into that
    variable's *ready queue* (a local queue on the worker, one token per tower);
  - every read of a tower's copy built into the step waits for one token of its own variable's
    ready queue, so the first layers compute while the later chunks still come down, and the
    step's gradients are tagged with the step those tokens carry.
The copies are filled at session start and each ready queue seeded with the global step, so the
first step reads the fill. `SyncReplicas.apply_worker_gradients(tag=...)` holds the other half:
the pulls' loop, and the wait at the end for the last step's pulls.
"""
import tensorflow.compat.v1 as tf

READY_QUEUE = 'tfhp_ready'


class ReadyQueues:
    """A ready queue per master (slice), on the worker, for `num_towers` towers.

    Args:
      device: the worker's CPU.
      num_towers: tokens per release: one for each tower's reads.
    """

    def __init__(self, device, num_towers):
        self._device = device
        self._num_towers = num_towers
        self._queues = {}  # master op name -> queue

    def _queue(self, master):
        name = master.op.name
        if name not in self._queues:
            with tf.device(self._device):
                # No shared_name: the worker's own, seeded afresh by each session.
                self._queues[name] = tf.FIFOQueue(-1, [tf.int64], shapes=[[]],
                                                  name='%s/%s' % (READY_QUEUE, name))
        return self._queues[name]

    def gate(self, copies_and_masters):
        """Makes each copy's reads built so far wait for a token of its master's queue.

        Args:
          copies_and_masters: [(tower, copy variable, master)], every tower's.
        Returns:
          The step the tokens carry (int64 scalar): what the reads hold, the gradients' tag.
        """
        steps = []
        for tower, copy, master in copies_and_masters:
            with tf.device(self._device), tf.name_scope('%s/tower_%d' % (READY_QUEUE, tower)):
                step = self._queue(master).dequeue()
            steps.append(step)
            for read in _reads(copy):
                read._add_control_input(step.op)  # pylint: disable=protected-access
        if not steps:
            raise ValueError('background pulls: the towers read no copy of a master')
        with tf.device(self._device):
            return tf.reduce_max(tf.stack(steps), name='%s/step' % READY_QUEUE)

    def release(self, master, step):
        """An op putting one token holding `step` per tower into master's queue."""
        with tf.device(self._device):
            return self._queue(master).enqueue_many(
                tf.fill([self._num_towers], tf.cast(step, tf.int64)))

    def seed(self, step):
        """An op emptying every queue, then releasing each master at `step` (session start)."""
        with tf.device(self._device):
            emptied = [q.dequeue_up_to(q.size()) for q in self._queues.values()]
            with tf.control_dependencies(emptied):
                step = tf.identity(step)
        return tf.group(*[q.enqueue_many(tf.fill([self._num_towers], step))
                          for q in self._queues.values()], name='seed_%s' % READY_QUEUE)


def _reads(copy):
    """copy's ReadVariableOps outside loops and branches (a control edge cannot enter them)."""
    return [op for op in copy.handle.consumers() if op.type == 'ReadVariableOp' and
            op._control_flow_context is None]  # pylint: disable=protected-access

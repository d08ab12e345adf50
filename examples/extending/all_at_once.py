"""A new ps transfer: every chunk pushed at once, each pulled as soon as it is applied.

The pipelined transfers send a ps task's chunks in a chain, one (or a window) at a time; this
one lets them all share the link and waits for none, to see what the chain buys. It is a row of
`tfhp.modes.TRANSFERS` (what it combines with: chunked, so only a strategy whose workers keep
copies takes it) and a class whose `build(step)` makes steps 3 and 4 of the sync protocol.
`main` checks that it trains as tf_cnn_benchmarks' whole step does. The recipe is in
docs/extending.md.

  python examples/extending/all_at_once.py
"""
import numpy as np
import tensorflow.compat.v1 as tf

from tfhp import modes
from tfhp.replication import sync_replicas
from tfhp.replication import transfers


class AllAtOnce:
    """Every gradient pushed at once; each variable released (and pulled) on its own."""

    def __init__(self, row, chunk_bytes):
        self.row = row
        self.chunk_bytes = chunk_bytes  # DistributedReplicated cuts its variables to this

    def build(self, step):
        first = [step.gate] if step.gate is not None else []  # spares: the late count
        applies = [step.push(i, step.step_read, first, False)
                   for i in range(len(step.grads_and_vars))]
        return transfers.released(step, applies)


transfers.register(
    modes.Transfer('all_at_once', chunked=True,
                   doc='every chunk pushed at once, each pulled as soon as it is applied'),
    AllAtOnce)


def train(transfer, steps=3):
    """(the variables, the global step) after `steps` synchronous steps of one worker, the
    chief, through `transfer` (a --ps_transfer), with SGD on loss = sum of v squared."""
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        variables = [tf.Variable(np.full([4], 1.0 + i, np.float32), name='v%d' % i)
                     for i in range(3)]
        loss = tf.add_n([tf.reduce_sum(tf.square(v)) for v in variables])
        sync = sync_replicas.SyncReplicas(None, '/cpu:0', 1, 1, is_chief=True,
                                          transfer=transfers.make(transfer))
        update = sync.apply_worker_gradients(
            list(zip(tf.gradients(loss, variables), variables)),
            lambda: tf.train.GradientDescentOptimizer(0.1), global_step)
        with tf.train.MonitoredSession(hooks=update.hooks) as sess:
            for _ in range(steps):
                sess.run(update.train_op, options=tf.RunOptions(timeout_in_ms=60000))
            return sess.run(variables), sess.run(global_step)


def main():
    """Trains through all_at_once and whole_step; returns both results."""
    ours, whole = train('all_at_once'), train(modes.WHOLE_STEP)
    print('all_at_once vs whole_step after 3 steps: largest difference %.2g, global steps %d, %d'
          % (max(np.max(np.abs(a - b)) for a, b in zip(ours[0], whole[0])), ours[1], whole[1]))
    return ours, whole


if __name__ == '__main__':
    tf.disable_v2_behavior()
    main()

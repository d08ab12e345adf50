"""Evaluating while training (tf_cnn_benchmarks' --eval_during_training_every_n_*).

The evaluation graph is a graph of its own, built like an --eval run's (validation data,
inference-mode batch norm, --eval_batch_size per device), with its own session that lives as
long as the training. Each evaluation moves the training session's weights to it through a
checkpoint in a private temporary directory (the variables' canonical names are the same in
any variable manager, so the training's manager and tower count do not matter) and runs
--num_eval_batches evaluation steps. Training's own checkpoints in --train_dir are not touched:
the weights are written with `write_state=False`, which keeps them out of the saver's list of
checkpoints to keep.
"""
import os
import shutil
import tempfile

import tensorflow.compat.v1 as tf

from tfhp.runner import loops
from tfhp import session as session_lib


class DuringTraining:
    """Evaluates a training session's weights every `every` timed steps.

    Use as a context manager (it owns a session and a temporary directory).

    Args:
      built: the `build.Built` evaluation graph.
      every: timed training steps between evaluations.
      num_batches: evaluation steps per evaluation.
      target: stop training at the first evaluation whose top-1 accuracy reaches this; None:
        never.
      log: called with each line to print.
    """

    def __init__(self, built, every, num_batches, target, log):
        self._built = built
        self.every = every
        self._num_batches = num_batches
        self.target = target
        self._log = log
        self._directory = None
        self._sess = None
        self._warmed_up = False

    def __enter__(self):
        self._directory = tempfile.mkdtemp(prefix='tfhp_eval_')
        self._sess = tf.Session(graph=self._built.graph, config=self._built.session_config)
        self._sess.run(self._built.init)
        return self

    def __exit__(self, *exc_info):
        self._sess.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    def evaluate(self, train_sess, train_saver):
        """Evaluates the weights `train_sess` holds now.

        Returns:
          {'global_step', 'top_1_accuracy', 'top_5_accuracy'} of this evaluation.
        """
        path = train_saver.save(train_sess, os.path.join(self._directory, 'weights'),
                                write_meta_graph=False, write_state=False)
        self._built.saver.restore(self._sess, path)
        self._sess.run(self._built.post_init_ops)
        if not self._warmed_up:
            # Staged input keeps its prefetched batches from one evaluation to the next.
            session_lib.warm_up(self._sess, self._built.ops.warmup_ops)
            self._warmed_up = True
        self._log('Evaluating the weights of global step %d' % train_sess.run(
            tf.train.get_global_step(train_sess.graph)))
        _, figures = loops.run_eval(self._sess, self._built.ops, self._num_batches, self._log)
        return figures

    def reached(self, figures):
        """Whether an evaluation's top-1 accuracy reached the target."""
        return self.target is not None and figures['top_1_accuracy'] >= self.target

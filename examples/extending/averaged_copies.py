"""A new variable-update strategy: model averaging. Every tower steps its own copy of the
variables with its own gradients, then every copy takes the mean of the copies.

For plain SGD this is the replicated update (the mean of w - lr*g_t is w - lr*mean(g_t)), so
`main` checks the two against each other; with momentum or a period longer than one step it is
a different algorithm (local SGD), which is why a researcher would add it. The recipe is in
docs/extending.md.

  python examples/extending/averaged_copies.py
"""
import numpy as np
import tensorflow.compat.v1 as tf

from tfhp import config as config_lib
from tfhp import modes
from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step as step_lib
from tfhp import topology as topology_lib
from tfhp.ops import scopes
from tfhp.pipelines import constant
from tfhp.replication import base
from tfhp.replication import per_tower_copies


class AveragedCopies(per_tower_copies.PerTowerCopies):
    """Per-tower copies, each stepped alone, then all set to their mean (one update a step)."""

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        with tf.name_scope(scopes.APPLY):
            updates = [self._apply_on_tower(t, optimizer_fn,
                                            [(g, v) for g, v in tower if g is not None])
                       for t, tower in enumerate(tower_grads)]
            averages = []
            with tf.control_dependencies(updates):
                for copies in zip(*[[v for _, v in tower] for tower in tower_grads]):
                    mean = tf.add_n([c.read_value() for c in copies]) / len(copies)
                    averages += [c.assign(mean, read_value=False) for c in copies]
            train_op = self._increment(averages, global_step)
        return base.Update(train_op=train_op, post_init_ops=self.post_init_ops(), hooks=[])


replication.register_strategy(
    modes.Strategy('averaged_copies', one_graph=True, graph_per_worker=False,
                   doc='a copy per tower, stepped alone, then every copy set to the mean'),
    one_graph=lambda cfg, topology: AveragedCopies(topology.tower_devices))


def train(variable_update, num_towers=2, steps=3):
    """Tower 0's variables after `steps` SGD steps of a softmax classifier on fixed data."""
    rng = np.random.RandomState(0)
    features = rng.normal(size=[4 * num_towers, 6]).astype(np.float32)
    labels = rng.randint(0, 3, size=[4 * num_towers]).astype(np.int32)

    def model_fn(images, labels):
        weights = tf.get_variable('weights', initializer=np.full([6, 3], 0.1, np.float32))
        logits = tf.matmul(images, weights)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits)), logits

    with tf.Graph().as_default():
        topology = topology_lib.Topology.local('cpu', num_towers)
        manager = replication.make_variable_manager(
            config_lib.ReplicationConfig(variable_update=variable_update), topology)
        ops = step_lib.build_train_step(constant.ConstantPipeline(features, labels), model_fn,
                                        manager, lambda: tf.train.GradientDescentOptimizer(0.5),
                                        topology)
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=num_towers)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(ops.post_init_ops)
            for _ in range(steps):
                sess.run(ops.train_op)
            return sess.run(manager.trainable_variables(0))


def main():
    """Trains with averaged_copies and replicated; returns both results."""
    averaged, replicated = train('averaged_copies'), train('replicated')
    print('averaged_copies vs replicated after 3 steps: largest difference %.2g' % max(
        np.max(np.abs(a - r)) for a, r in zip(averaged, replicated)))
    return averaged, replicated


if __name__ == '__main__':
    main()

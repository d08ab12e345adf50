"""The training step against a hand computation: cross entropy + L2, SGD, one session.run."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import build
from tfhp.runner import optimizers
from tfhp import replication
from tfhp import session
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.config import ReplicationConfig
from tfhp.pipelines import base


class FixedPipeline(base.Pipeline):
    """The same numpy batch on every tower."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def tower_batches(self, topology):
        batches = [(tf.constant(self.images), tf.constant(self.labels))
                   for _ in topology.tower_devices]
        return base.InputBatches(batches=batches, put_ops=[], warmup_ops=[])


def _linear_model(images, labels):
    weights = tf.get_variable('fc/weights', [3, 2], initializer=tf.constant_initializer(
        [[0.1, -0.2], [0.3, 0.0], [-0.1, 0.2]]))
    logits = tf.matmul(images, weights)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    return loss, logits


def _numpy_step(w, x, y, lr, wd, clip=None):
    logits = x @ w
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(y)), y] -= 1.0
    grad = x.T @ p / len(y) + wd * w
    if clip is not None:
        grad = np.clip(grad, -clip, clip)
    return w - lr * grad


@pytest.mark.parametrize('clip', [None, 0.05])
def test_one_step_matches_hand_computation(clip):
    x = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 2.0]], np.float32)
    y = np.array([1, 0], np.int32)
    topo = topology_lib.Topology.local('cpu', 1)
    with tf.Graph().as_default():
        manager = replication.make_variable_manager(ReplicationConfig(), topo)
        ops = step.build_train_step(
            FixedPipeline(x, y), _linear_model, manager,
            lambda: tf.train.GradientDescentOptimizer(0.5), topo, weight_decay=0.01,
            gradient_clip=clip)
        weights = tf.trainable_variables()[0]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            w0 = sess.run(weights)
            sess.run(ops.train_op)
            w1, global_step = sess.run([weights, ops.global_step])
    np.testing.assert_allclose(w1, _numpy_step(w0, x, y, 0.5, 0.01, clip), rtol=1e-6)
    assert global_step == 1


@pytest.mark.parametrize('variable_update, num_towers', [
    ('parameter_server', 1), ('replicated', 2)])
def test_decay_in_the_update_is_the_sgd_step_on_the_loss_with_its_l2_term(variable_update,
                                                                         num_towers):
    x = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 2.0]], np.float32)
    y = np.array([1, 0], np.int32)
    lr, wd = 0.5, 0.2   # lr * wd = 0.1: a wrong proximal rate would be off by percents
    topo = topology_lib.Topology.local('cpu', num_towers)
    with tf.Graph().as_default():
        manager = replication.make_variable_manager(
            ReplicationConfig(variable_update=variable_update), topo)
        ops = step.build_train_step(
            FixedPipeline(x, y), _linear_model, manager,
            lambda: optimizers.DecayingGradientDescent(lr, wd), topo, weight_decay=wd,
            decay_in_update=True)
        assert not [op for op in tf.get_default_graph().get_operations()
                    if 'L2Loss_grad' in op.name]
        towers = [manager.trainable_variables(t)[0] for t in range(num_towers)]
        with tf.Session(config=session.config_proto(num_cpu_devices=num_towers)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(ops.post_init_ops)
            w0 = sess.run(towers[0])
            loss, _ = sess.run([ops.loss, ops.train_op])
            updated = sess.run(towers)
    for w1 in updated:
        np.testing.assert_allclose(w1, _numpy_step(w0, x, y, lr, wd), rtol=1e-6)
    # The reported loss keeps its L2 term: cross entropy + wd * |w0|^2 / 2.
    logits = x @ w0
    cross_entropy = np.mean(np.log(np.exp(logits).sum(1)) - logits[np.arange(2), y])
    assert loss == pytest.approx(cross_entropy + wd * (w0 ** 2).sum() / 2, rel=1e-6)


def test_step_ops_contract():
    topo = topology_lib.Topology.local('cpu', 1)
    x = np.ones([4, 3], np.float32)
    y = np.array([0, 1, 1, 0], np.int32)
    with tf.Graph().as_default():
        manager = replication.make_variable_manager(ReplicationConfig(), topo)
        ops = step.build_train_step(FixedPipeline(x, y), _linear_model, manager,
                                    lambda: tf.train.GradientDescentOptimizer(0.1), topo)
        assert ops.loss.shape.ndims == 0
        assert ops.warmup_ops == [] and ops.post_init_ops == [] and ops.hooks == []
        # Forward and backward ops carry their stage scopes (the trace analyser reads them).
        names = [op.name for op in tf.get_default_graph().get_operations()]
        assert any(n.startswith('tower_0/forward/') for n in names)
        assert any(n.startswith('tower_0/backward/') for n in names)
        assert any(n.startswith('apply/') for n in names)


def test_no_batch_norm_op_of_a_tower_gates_a_gradient():
    # A control edge out of a batch norm keeps Grappler from fusing it with its ReLU; its
    # small scale and offset are not worth gating (tfhp.ops.in_place).
    graph = build.build(testing.small_config(model='resnet50', image_size=32,
                                                 batch_size=2)).graph
    norms = [op for op in graph.get_operations() if op.type.startswith('FusedBatchNorm')]
    assert len(norms) == 2 * 53   # forward and gradient of each of ResNet-50's batch norms
    assert not [op.name for op in norms if op._control_outputs]  # pylint: disable=protected-access
    # The big weights are still gated, so their updates stay in place.
    gated = [op for op in graph.get_operations() if op.type == 'Identity' and
             op.control_inputs and op.name.startswith('tower_0/backward')]
    assert gated

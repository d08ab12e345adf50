"""The synchronous protocol in one process: two workers' graphs on one in-process server.

Every step is driven by hand, so each claim is checked exactly: a step waits for
replicas_to_aggregate fresh gradients, applies their mean once, and a late (spare) gradient is
dropped, leaves the variables alone and is counted.
"""
import threading

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.pipelines import base
from tfhp.replication import parameter_server
from tfhp.replication import sync_replicas

pytestmark = pytest.mark.cluster
# Variables, accumulators and queues on cpu:0 (the "ps"); worker w on cpu:w+1, where its local
# step and counters live.
DEVICE = '/job:localhost/replica:0/task:0/cpu:%d'
PS = DEVICE % 0
LR = 0.5
# Worker w's data: its gradient of loss = mean(x @ w) is mean(x, axis=0) (a constant).
DATA = [np.array([[1.0, 2.0]], np.float32), np.array([[3.0, -4.0]], np.float32)]



def open_worker_session(target, graph, init_ops, hooks):
    """A session on `graph` at `target`, init_ops run one after the other and every hook told
    of it, as a monitored session would: (session, coordinator)."""
    sess = tf.Session(target, graph=graph)
    for op in init_ops:
        sess.run(op)
    coord = tf.train.Coordinator()
    for hook in hooks:
        hook.after_create_session(sess, coord)
    return sess, coord

class _Fixed(base.Pipeline):

    def __init__(self, images):
        self._images = images

    def tower_batches(self, topology):
        return base.InputBatches(batches=[(tf.constant(self._images), tf.zeros([1], tf.int32))],
                                 put_ops=[], warmup_ops=[])


def _model(images, labels):
    del labels
    weights = tf.get_variable('w', [2, 1], initializer=tf.zeros_initializer())
    logits = tf.matmul(images, weights)
    return tf.reduce_mean(logits), tf.concat([logits] * 5, 1)


@pytest.fixture(scope='module')
def server():
    return tf.train.Server.create_local_server(config=tf.ConfigProto(device_count={'CPU': 3}))


class _Worker:
    """One worker's graph and session; `step()` runs its train op once."""

    def __init__(self, target, index, replicas_to_aggregate, container):
        device = DEVICE % (index + 1)
        topology = topology_lib.Topology(
            tower_devices=(device,), variable_devices=(PS,), input_device=device,
            is_chief=index == 0, graph_mode='between_graph', job_name='worker',
            task_index=index, num_workers=2)
        self.graph = tf.Graph()
        # Shared names tie the two graphs' variables, accumulators and queues together; a
        # container per test keeps tests apart on the one server.
        with self.graph.as_default(), self.graph.container(container):
            with tf.device(PS):
                self.global_step = tf.train.get_or_create_global_step()
            self.manager = sync_replicas.SyncReplicas(
                parameter_server.ParameterServer([device], [PS]), device,
                replicas_to_aggregate, num_replicas=2, is_chief=index == 0)
            self.ops = step.build_train_step(
                _Fixed(DATA[index]), _model, self.manager,
                lambda: tf.train.GradientDescentOptimizer(LR), topology)
            self.weights = tf.trainable_variables()[0]
            self.dropped = self.manager.counters()['dropped_gradients']
            init = tf.global_variables_initializer() if index == 0 else tf.no_op()
            local_init = tf.local_variables_initializer()
        self.sess, self.coord = open_worker_session(target, self.graph, [init, local_init],
                                                    self.ops.hooks)

    def step(self):
        self.sess.run(self.ops.train_op, options=tf.RunOptions(timeout_in_ms=20000))

    def read(self):
        return self.sess.run([self.global_step, self.weights, self.dropped])

    def close(self):
        self.coord.request_stop()
        self.sess.close()


def _expected(*steps):
    """Weights after SGD steps, each the mean of the given workers' gradients."""
    weights = np.zeros([2, 1], np.float32)
    for workers in steps:
        weights -= LR * np.mean([DATA[w].mean(0) for w in workers], 0).reshape(2, 1)
    return weights


def test_without_spares_a_step_waits_for_every_replica(server):
    chief = _Worker(server.target, 0, 2, 'nospares')
    other = _Worker(server.target, 1, 2, 'nospares')
    try:
        waiting = threading.Thread(target=chief.step)
        waiting.start()
        waiting.join(0.5)
        assert waiting.is_alive()  # the chief's gradient alone makes no step
        other.step()
        waiting.join(20)
        assert not waiting.is_alive()
        global_step, weights, dropped = chief.read()
        assert global_step == 1 and dropped == 0
        np.testing.assert_allclose(weights, _expected([0, 1]), rtol=1e-6)
    finally:
        chief.close()
        other.close()


def test_a_spare_replicas_late_gradient_is_dropped_and_counted(server):
    chief = _Worker(server.target, 0, 1, 'onespare')
    spare = _Worker(server.target, 1, 1, 'onespare')
    try:
        chief.step()        # step 1, from the chief's gradient alone
        spare.step()        # computed at step 0, sent after step 1: late, dropped
        global_step, weights, dropped = spare.read()
        assert (global_step, dropped) == (1, 1)
        np.testing.assert_allclose(weights, _expected([0]), rtol=1e-6)
        spare.step()        # relabelled to step 1 after its late step: fresh, makes step 2
        global_step, weights, dropped = spare.read()
        assert (global_step, dropped) == (2, 1)
        np.testing.assert_allclose(weights, _expected([0], [1]), rtol=1e-6)
        chief.step()        # the chief's gradient is from step 1 now: late in its turn
        global_step, weights, dropped = chief.read()
        assert (global_step, dropped) == (2, 1)
        np.testing.assert_allclose(weights, _expected([0], [1]), rtol=1e-6)
    finally:
        chief.close()
        spare.close()

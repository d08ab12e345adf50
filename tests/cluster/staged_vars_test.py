"""--staged_vars between graphs, in one process: two workers' graphs on one in-process server.

Each worker's towers read the ps variables through staging areas on its own device. Checked
against numpy recurrences: synchronous steps make the one-process staged recurrence over the
workers' mean gradient, and drop no gradient; asynchronous steps compute on the weights each
worker's areas got at its previous step.
"""
import threading

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.cluster import sync_replicas_test
from tests.replication import equivalence_test
from tests.replication import staged_vars_test
from tfhp import config as config_lib
from tfhp import replication
from tfhp.runner import step
from tfhp import topology as topology_lib

pytestmark = pytest.mark.cluster
# Variables (and the protocol's accumulators and queues) on cpu:0, the "ps"; worker w on cpu:w+1,
# where its staging areas live.
DEVICE = '/job:localhost/replica:0/task:0/cpu:%d'
PS = DEVICE % 0
X, Y, W0, LR, WD = (staged_vars_test.X, staged_vars_test.Y, staged_vars_test.W0,
                    staged_vars_test.LR, staged_vars_test.WD)
ROWS = [slice(0, 3), slice(3, 6)]  # worker w's batch: half of the rows each
TIMEOUT = tf.RunOptions(timeout_in_ms=20000)


@pytest.fixture(scope='module')
def server():
    return tf.train.Server.create_local_server(config=tf.ConfigProto(device_count={'CPU': 5}))


def _gradient(w, rows):
    """staged_vars_test.gradient over `rows` of the batch."""
    logits = X[rows] @ w
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(Y[rows])), Y[rows]] -= 1.0
    return X[rows].T @ p / len(Y[rows]) + WD * w


class _Worker:
    """One worker's graph and session, built by the manager factory as a job's worker is."""

    def __init__(self, target, index, synchronous, container, num_towers=1):
        towers = tuple(DEVICE % (1 + 2 * index + t) for t in range(num_towers))
        device = towers[0]
        topology = topology_lib.Topology(
            tower_devices=towers, variable_devices=(PS,), input_device=device,
            is_chief=index == 0, graph_mode='between_graph', job_name='worker',
            task_index=index, num_workers=2, synchronous=synchronous)
        self.graph = tf.Graph()
        with self.graph.as_default(), self.graph.container(container):
            with tf.device(PS):
                tf.train.get_or_create_global_step()
            manager = replication.make_variable_manager(
                config_lib.ReplicationConfig(staged_vars=True), topology,
                config_lib.ClusterConfig())
            pipeline = equivalence_test.SlicedPipeline(X[ROWS[index]], Y[ROWS[index]],
                                                       3 // num_towers)
            self.ops = step.build_train_step(
                pipeline, staged_vars_test.linear, manager,
                lambda: tf.train.GradientDescentOptimizer(LR), topology, weight_decay=WD)
            self.weights = tf.global_variables('fc/weights')[0]
            # What crosses from the ps for the staged reads: reads of the variable (which run
            # where it lives).
            self.ps_reads = [op for op in self.graph.get_operations()
                             if op.type == 'ReadVariableOp' and '/staging/' in op.name and
                             op.inputs[0].device == self.weights.device]
            self.counters = manager.counters()
            init = tf.global_variables_initializer() if index == 0 else tf.no_op()
            local_init = tf.local_variables_initializer()
        self.sess, self.coord = sync_replicas_test.open_worker_session(
            target, self.graph, [init, local_init], self.ops.hooks)

    def prime(self):
        self.sess.run(self.ops.post_init_ops, options=TIMEOUT)

    def step(self):
        self.sess.run(self.ops.train_op, options=TIMEOUT)

    def read(self):
        return self.sess.run(self.weights)

    def close(self):
        self.coord.request_stop()
        self.sess.close()


def _workers(server, synchronous, container, num_towers=1):
    workers = [_Worker(server.target, 0, synchronous, container, num_towers)]
    workers.append(_Worker(server.target, 1, synchronous, container, num_towers))
    for worker in workers:
        worker.prime()  # after the chief's initialisation, as a job's worker does
    return workers


@pytest.mark.parametrize('num_towers', [1, 2])
def test_synchronous_staged_steps_follow_the_stale_recurrence_and_drop_nothing(server,
                                                                               num_towers):
    workers = _workers(server, True, 'stagedsync%d' % num_towers, num_towers)
    # One read of the variable from the ps per worker and step, whatever its towers.
    assert [len(w.ps_reads) for w in workers] == [1, 1]
    try:
        got = []
        for _ in range(4):
            threads = [threading.Thread(target=w.step) for w in workers]
            for t in threads:
                t.start()
            for t in threads:
                t.join(20)
            assert not any(t.is_alive() for t in threads)
            got.append(workers[1].read())
        dropped = [w.sess.run(w.counters['dropped_gradients']) for w in workers]
    finally:
        for worker in workers:
            worker.close()
    assert dropped == [0, 0]
    # The mean of the workers' (and towers') gradients is the gradient over the rows they
    # took: the one-process recurrence w1 = w0 - lr g(w0); w_{k+1} = w_k - lr g(w_{k-1}).
    rows = np.r_[0:3, 3:6] if num_towers == 1 else np.r_[0:2, 3:5]
    want = [W0, W0 - LR * _gradient(W0, rows)]
    for _ in range(3):
        want.append(want[-1] - LR * _gradient(want[-2], rows))
    for k, (g, w) in enumerate(zip(got, want[1:])):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg='step %d' % (k + 1))
    # Not plain SGD: staleness shows in the numbers.
    plain = W0 - LR * _gradient(W0, rows)
    assert np.abs(got[1] - (plain - LR * _gradient(plain, rows))).max() > 1e-3


def test_asynchronous_staged_steps_compute_on_the_previous_steps_refill(server):
    workers = _workers(server, False, 'stagedasync')
    order = [0, 1, 1, 0, 0, 1, 0]  # steps taken one at a time, so the numbers are exact
    try:
        got = []
        for w in order:
            workers[w].step()
            got.append(workers[w].read())
    finally:
        for worker in workers:
            worker.close()
    # Each worker's areas hold the weights of its previous refill (its priming at first); a
    # step computes on them, refills with the weights before its own apply, then applies.
    weights, staged = W0.copy(), [W0.copy(), W0.copy()]
    for k, (w, value) in enumerate(zip(order, got)):
        read, staged[w] = staged[w], weights.copy()
        weights = weights - LR * _gradient(read, ROWS[w])
        np.testing.assert_allclose(value, weights, rtol=1e-5, atol=1e-6,
                                   err_msg='step %d (worker %d)' % (k + 1, w))

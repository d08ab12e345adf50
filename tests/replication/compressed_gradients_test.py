"""Managers with compression that cannot be summed (sign, top-k): the update is the mean of the
decompressed payloads, error feedback carried from step to step; only payloads cross devices,
of the size wire_ratio says."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import benchmark
from tfhp import compression
from tfhp import config as config_lib
from tfhp import replication
from tfhp import session as session_lib
from tfhp import topology as topology_lib
from tfhp.ops import scopes
from tfhp.replication import async_replicas
from tfhp.replication import collective_workers
from tfhp.replication import parameter_server

SHAPE = (40, 80)  # 3200 elements: top-k sends 32
NUM_STEPS = 3
RNG = np.random.RandomState(5)
# GRADS[step][tower]: the gradient tower t computes at each step (its loss is sum(w * x)).
GRADS = RNG.normal(size=(NUM_STEPS, 2) + SHAPE).astype(np.float32)


def _sign(p):
    return np.abs(p).mean() * np.where(p >= 0, 1.0, -1.0)


def _topk(p):
    sent = np.zeros(p.size, np.float32)
    largest = np.argsort(np.abs(p).ravel())[-32:]
    sent[largest] = p.ravel()[largest]
    return sent.reshape(p.shape)


DECOMPRESSED = {'sign': _sign, 'topk': _topk}


def _expected_weights(name):
    """w after each SGD step (rate 1, from zeros) with error feedback per tower, in numpy."""
    w, residuals, weights = np.zeros(SHAPE), [np.zeros(SHAPE)] * 2, []
    for step_grads in GRADS:
        sent = []
        for t, grad in enumerate(step_grads):
            corrected = grad + residuals[t]
            sent.append(DECOMPRESSED[name](corrected))
            residuals[t] = corrected - sent[-1]
        w = w - np.mean(sent, axis=0)
        weights.append(w)
    return weights


def _crossing_bytes(graph, src_devices, dst_devices):
    """Bytes of the tensors the aggregate stage moves from src_devices to dst_devices."""
    def index(device):
        return tf.DeviceSpec.from_string(device).device_index if device else None
    total = 0
    for op in graph.get_operations():
        if op.name.startswith(scopes.AGGREGATE + '/') and index(op.device) in dst_devices:
            for t in op.inputs:
                if index(t.op.device) in src_devices and index(t.op.device) != index(op.device):
                    total += t.shape.num_elements() * t.dtype.size
    return total


def _train(manager, num_cpus):
    """NUM_STEPS steps of GRADS through `manager`; (each step's tower variables, graph)."""
    with tf.Graph().as_default() as graph:
        global_step = tf.train.get_or_create_global_step()
        feeds, tower_grads = [], []
        for t in range(2):
            with manager.tower_scope(t):
                w = tf.get_variable('w', SHAPE, initializer=tf.zeros_initializer())
                x = tf.placeholder(tf.float32, SHAPE)
                [var] = manager.trainable_variables(t)
                tower_grads.append([(tf.gradients(tf.reduce_sum(w * x), var)[0], var)])
            feeds.append(x)
        update = manager.apply_gradients(tower_grads,
                                         lambda: tf.train.GradientDescentOptimizer(1.0),
                                         global_step)
        variables = [v for _, v in sum(tower_grads, [])]
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=num_cpus)) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(update.post_init_ops)
            weights = []
            for step_grads in GRADS:
                sess.run(update.train_op, dict(zip(feeds, step_grads)))
                weights.append(sess.run(variables))
    return weights, graph


def _payload_bytes(name):
    return {'sign': 3200 // 8 + 4, 'topk': 32 * (4 + 4)}[name]


@pytest.mark.parametrize('spec', ['xring', 'pscpu/xring'])
@pytest.mark.parametrize('name', sorted(DECOMPRESSED))
def test_replicated_applies_the_mean_of_the_decompressed_payloads(name, spec):
    cfg = config_lib.ReplicationConfig(variable_update='replicated', all_reduce_spec=spec,
                                       gradient_compression=name)
    manager = replication.make_variable_manager(cfg, topology_lib.Topology.local('cpu', 2))
    weights, graph = _train(manager, num_cpus=2)
    for got, expected in zip(weights, _expected_weights(name)):
        np.testing.assert_allclose(got[0], expected, atol=1e-5)
        np.testing.assert_array_equal(got[1], got[0])  # the copies stay bitwise equal
    # Each tower receives the other's payload, and nothing else: 1/32 or 2% of the gradient.
    assert _crossing_bytes(graph, {0, 1}, {0, 1}) == 2 * _payload_bytes(name)
    ratio = compression.get(name).wire_ratio
    assert abs(_payload_bytes(name) - ratio * 4 * 3200) <= 4


@pytest.mark.parametrize('name', sorted(DECOMPRESSED))
def test_parameter_server_decompresses_each_towers_payload_and_means_them(name):
    manager = parameter_server.ParameterServer(('/cpu:1', '/cpu:2'), ('/cpu:0',),
                                               compressor=compression.get(name))
    weights, graph = _train(manager, num_cpus=3)
    for got, expected in zip(weights, _expected_weights(name)):
        np.testing.assert_allclose(got[0], expected, atol=1e-5)
    # The ps receives one payload per tower.
    assert _crossing_bytes(graph, {1, 2}, {0}) == 2 * _payload_bytes(name)


def test_an_async_worker_sends_top_k_and_the_ps_applies_it():
    worker, ps = '/cpu:0', '/cpu:1'
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        manager = async_replicas.AsyncReplicas(
            parameter_server.ParameterServer((worker,), (ps,)), worker,
            compression.get('topk'))
        with manager.tower_scope(0):
            w = tf.get_variable('w', SHAPE, initializer=tf.zeros_initializer())
        [var] = manager.trainable_variables(0)
        update = manager.apply_gradients(
            [[(tf.gradients(tf.reduce_sum(w * GRADS[0][0]), var)[0], var)]],
            lambda: tf.train.GradientDescentOptimizer(1.0), global_step)
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(update.train_op)
            got = sess.run(var)
    np.testing.assert_allclose(got, -_topk(GRADS[0][0]), atol=1e-6)


def test_the_collective_workers_refuse_a_payload_they_cannot_sum():
    with pytest.raises(ValueError, match="'sign' cannot be summed"):
        collective_workers.CollectiveWorkers(('/cpu:0',), 2, True,
                                             compressor=compression.get('sign'))


@pytest.mark.parametrize('replication_fields', [
    {'variable_update': 'replicated', 'all_reduce_spec': 'xring',
     'gradient_compression': 'sign'},
    {'gradient_compression': 'topk'},  # the parameter server, in one graph
])
def test_the_benchmark_trains_with_a_scheme_that_cannot_be_summed(replication_fields):
    cfg = testing.small_config(num_batches=2, device={'num_devices': 2},
                               replication=replication_fields)
    result = benchmark.run(cfg, log=lambda _: None)
    assert result['global_step'] == 3 and np.isfinite(result['final_loss'])


def test_a_scheme_needs_a_manager_that_aggregates():
    with pytest.raises(config_lib.ConfigError, match='--gradient_compression applies to'):
        benchmark.run(testing.small_config(replication={'variable_update': 'independent',
                                                        'gradient_compression': 'sign'}),
                      log=lambda _: None)

"""Fusion buckets (--fusion_bucket_bytes): the same training as without them, and each bucket's
all-reduce waits for its own gradients only, so the first leaves while the backward pass goes on.

The mlp of equivalence_test has 4 gradients; in backward order fc1/biases (12 bytes),
fc1/weights (60), fc0/biases (20), fc0/weights (140). Buckets of 80 bytes make 3 all-reduces:
fc1's two gradients, then fc0/biases, then fc0/weights alone (larger than a bucket).
"""
import threading

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tests.replication import equivalence_test
from tfhp.runner import benchmark
from tfhp import config as config_lib
from tfhp import replication
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.launcher import plan as plan_lib

BUCKET_BYTES = 80
BUCKETS = dict(variable_update='replicated', fusion_bucket_bytes=BUCKET_BYTES)


def _assert_same_variables(got, want):
    assert set(got) == set(want)
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize('spec', ['', 'xring'])
def test_replicated_with_buckets_trains_as_without(spec):
    without = config_lib.ReplicationConfig(variable_update='replicated', all_reduce_spec=spec)
    with_buckets = config_lib.ReplicationConfig(all_reduce_spec=spec, **BUCKETS)
    want = equivalence_test.train(without, 2, equivalence_test.BATCH_PER_TOWER)[0]
    got, every, _ = equivalence_test.train(with_buckets, 2, equivalence_test.BATCH_PER_TOWER)
    _assert_same_variables(got, want)
    for key, value in got.items():  # the copies stay bitwise identical
        if key != 'global_step':
            np.testing.assert_array_equal(every['v1/' + key], value, err_msg=key)


def _ancestors(op):
    """Every op `op` waits for: its inputs' and control inputs' ops, transitively."""
    seen, pending = set(), [op]
    while pending:
        current = pending.pop()
        for parent in [t.op for t in current.inputs] + list(current.control_inputs):
            if parent not in seen:
                seen.add(parent)
                pending.append(parent)
    return seen


def _first_all_reduce_and_gradients(**packing):
    """Builds 2 replicated towers of the mlp, all-reduced by `collective`; returns (the ops of
    the first all-reduce, {variable name: the towers' gradient ops})."""
    topology = topology_lib.Topology.local('cpu', 2)
    cfg = config_lib.ReplicationConfig(variable_update='replicated',
                                       all_reduce_spec='collective', **packing)
    with tf.Graph().as_default() as graph:
        manager = replication.make_variable_manager(cfg, topology)
        tower_grads, grad_ops = [], {}
        for t, device in enumerate(topology.tower_devices):
            with tf.device(device), manager.tower_scope(t):
                images = tf.constant(equivalence_test.IMAGES[:3])
                loss, _ = equivalence_test.mlp(images, tf.constant(equivalence_test.LABELS[:3]))
                variables = manager.trainable_variables(t)
                grads = tf.gradients(loss, variables)
            tower_grads.append(list(zip(grads, variables)))
            for grad, var in zip(grads, variables):
                grad_ops.setdefault(var.op.name.split('/', 1)[1], set()).add(grad.op)
        manager.apply_gradients(tower_grads, equivalence_test.momentum,
                                tf.train.get_or_create_global_step())
        # Creation order: bucket by bucket, a collective op per tower device in each.
        reduces = [op for op in graph.get_operations() if op.type == 'CollectiveReduceV2']
    return reduces[:2], grad_ops


def test_the_first_bucket_leaves_before_the_first_layer_has_gradients():
    first, grad_ops = _first_all_reduce_and_gradients(fusion_bucket_bytes=BUCKET_BYTES)
    assert [list(op.inputs[0].shape) for op in first] == [[3 + 15]] * 2  # fc1's gradients
    for op in first:
        waits_for = _ancestors(op)
        assert grad_ops['fc1/weights'] & waits_for and grad_ops['fc1/biases'] & waits_for
        assert not grad_ops['fc0/weights'] & waits_for
        assert not grad_ops['fc0/biases'] & waits_for


def test_one_pack_waits_for_every_gradient():
    first, grad_ops = _first_all_reduce_and_gradients(gradient_repacking=1)
    for op in first:
        waits_for = _ancestors(op)
        assert all(ops & waits_for for ops in grad_ops.values())


def _collective_worker(index, servers, proto, results):
    """Worker `index` of a between-graph collective_all_reduce job with buckets: 3 steps on its
    rows of equivalence_test's batch; puts its variables in results[index]."""
    device = '/job:worker/replica:0/task:%d/device:CPU:0' % index
    topology = topology_lib.Topology(
        tower_devices=(device,), variable_devices=(device,), input_device=device,
        is_chief=index == 0, graph_mode='between_graph', job_name='worker', task_index=index,
        num_workers=2)
    batch = equivalence_test.BATCH_PER_TOWER
    rows = slice(index * batch, (index + 1) * batch)
    with tf.Graph().as_default() as graph:
        manager = replication.make_variable_manager(
            config_lib.ReplicationConfig(variable_update='collective_all_reduce',
                                         fusion_bucket_bytes=BUCKET_BYTES),
            topology, config_lib.ClusterConfig(step_timeout_s=30))
        ops = step.build_train_step(
            equivalence_test.SlicedPipeline(equivalence_test.IMAGES[rows],
                                            equivalence_test.LABELS[rows], batch),
            equivalence_test.mlp, manager, equivalence_test.momentum, topology,
            weight_decay=0.01)
        every = {v.op.name: v for v in tf.global_variables()}
        init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
        buckets = [op for op in graph.get_operations() if op.type == 'CollectiveReduceV2']
    with tf.Session(servers[index].target, graph=graph, config=proto) as sess:
        sess.run(init)
        for hook in ops.hooks:
            hook.after_create_session(sess, None)
        for _ in range(equivalence_test.NUM_STEPS):
            sess.run(ops.train_op)
        results[index] = (len(buckets), sess.run(every))


@pytest.mark.cluster
def test_collective_workers_with_buckets_train_as_one_tower_with_both_batches():
    """2 worker tasks (gRPC servers of this process), a graph and a thread each: both end with
    the variables of one tower that took both workers' rows."""
    hosts = ['127.0.0.1:%d' % port for port in plan_lib.free_ports(2)]
    proto = tf.ConfigProto(device_count={'CPU': 1})
    proto.experimental.collective_group_leader = '/job:worker/replica:0/task:0'
    cluster = tf.train.ClusterSpec({'worker': hosts})
    servers = [tf.train.Server(cluster, job_name='worker', task_index=i, config=proto)
               for i in range(2)]
    results = {}
    threads = [threading.Thread(target=_collective_worker, args=(i, servers, proto, results))
               for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert sorted(results) == [0, 1], 'a worker failed (its thread logged why)'
    want = equivalence_test.reference(2)
    for index in range(2):
        num_buckets, variables = results[index]
        assert num_buckets == 3
        _assert_same_variables(variables, want)


def test_the_benchmark_trains_with_buckets():
    cfg = testing.small_config(num_batches=2, device={'num_devices': 2},
                               replication=dict(BUCKETS, fusion_bucket_bytes=4096))
    result = benchmark.run(cfg, log=lambda _: None)
    assert result['global_step'] == 3 and np.isfinite(result['final_loss'])


@pytest.mark.parametrize('subdivs, attr', [(0, -1), (16, 16)])
def test_collective_subdivs_reach_every_collective_of_the_workers(subdivs, attr):
    """--collective_subdivs: each all-reduce's ring splits a worker's share into at most that
    many chunks (-1: TensorFlow's choice); built, not run."""
    device = '/job:worker/replica:0/task:0/device:CPU:0'
    topology = topology_lib.Topology(
        tower_devices=(device,), variable_devices=(device,), input_device=device,
        is_chief=True, graph_mode='between_graph', job_name='worker', task_index=0,
        num_workers=2)
    with tf.Graph().as_default() as graph:
        manager = replication.make_variable_manager(
            config_lib.ReplicationConfig(variable_update='collective_all_reduce',
                                         fusion_bucket_bytes=BUCKET_BYTES,
                                         collective_subdivs=subdivs),
            topology, config_lib.ClusterConfig(step_timeout_s=30))
        step.build_train_step(
            equivalence_test.SlicedPipeline(equivalence_test.IMAGES[:2],
                                            equivalence_test.LABELS[:2], 2),
            equivalence_test.mlp, manager, equivalence_test.momentum, topology)
        reduces = [op for op in graph.get_operations() if op.type == 'CollectiveReduceV2']
    assert len(reduces) == 3  # the three buckets
    assert {op.get_attr('max_subdivs_per_device') for op in reduces} == {attr}

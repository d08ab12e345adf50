"""In-graph async: every replica thread takes its steps, and every update lands."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import async_runner
from tfhp.runner import benchmark
from tfhp import config as config_lib
from tfhp import replication
from tfhp import session as session_lib
from tfhp import topology as topology_lib
from tfhp.pipelines import base

NUM_REPLICAS = 3
LR = 0.25


class ColumnPipeline(base.Pipeline):
    """The tower on /cpu:t sees images whose column t is t + 1 and all others 0."""

    def tower_batches(self, topology):
        batches = []
        for device in topology.tower_devices:
            t = tf.DeviceSpec.from_string(device).device_index
            images = np.zeros([2, NUM_REPLICAS], np.float32)
            images[:, t] = t + 1
            with tf.device(device):
                batches.append((tf.constant(images), tf.zeros([2], tf.int32)))
        return base.InputBatches(batches=batches, put_ops=[], warmup_ops=[])


def linear(images, labels):
    """loss = mean over the batch of sum(images * w): its gradient is the mean image."""
    del labels
    w = tf.get_variable('w', [NUM_REPLICAS], initializer=tf.zeros_initializer())
    logits = images * w
    return tf.reduce_mean(tf.reduce_sum(logits, 1)), logits


def _build(manager=None):
    topology = topology_lib.Topology.local('cpu', NUM_REPLICAS, synchronous=False)
    manager = manager or replication.make_variable_manager(config_lib.ReplicationConfig(),
                                                           topology)
    # use_locking: concurrent updates of one variable must not lose any (exact check below).
    steps = async_runner.build_replica_steps(
        ColumnPipeline(), linear, manager,
        lambda: tf.train.GradientDescentOptimizer(LR, use_locking=True), topology)
    return steps + (manager,)


def test_every_replica_thread_takes_all_its_steps():
    steps, warmup = 20, 2
    with tf.Graph().as_default():
        combined, train_ops, manager = _build()
        assert len(train_ops) == NUM_REPLICAS
        weights = tf.global_variables('w')[0]
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=NUM_REPLICAS)) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            total, per_replica = async_runner.run_replicas(sess, train_ops, steps, 2,
                                                           num_warmup=warmup)
            w, global_step = sess.run([weights, combined.global_step])
            counted = sess.run(manager.counters())['staleness_count']
    assert [r.num_steps for r in per_replica] == [steps] * NUM_REPLICAS
    assert total.num_steps == steps * NUM_REPLICAS
    assert total.images_per_sec > 0
    # One increment per replica update; replica t moves w[t] only, by lr * (t + 1) per step.
    assert global_step == NUM_REPLICAS * (steps + warmup)
    assert counted == global_step  # every update's staleness measured
    want = [-LR * (t + 1) * (steps + warmup) for t in range(NUM_REPLICAS)]
    np.testing.assert_allclose(w, want, rtol=1e-6)


def test_a_manager_that_measures_no_staleness_is_refused():
    topology = topology_lib.Topology.local('cpu', NUM_REPLICAS)
    with tf.Graph().as_default():
        plain = replication.make_variable_manager(config_lib.ReplicationConfig(), topology)
        with pytest.raises(ValueError, match='not ParameterServer: use .*AsyncReplicas'):
            _build(plain)
        assert tf.get_default_graph().get_operations() == []  # refused before building


def test_a_failing_replica_raises_instead_of_hanging():
    with tf.Graph().as_default():
        ok = tf.no_op()
        bad = tf.debugging.Assert(False, ['replica broke'])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match='replica broke'):
                async_runner.run_replicas(sess, [ok, bad, ok], 5, 1, num_warmup=1,
                                          start_timeout_s=60)


def test_benchmark_reports_steps_per_replica():
    cfg = testing.small_config(num_batches=3, device={'num_devices': 2},
                               cluster={'cross_replica_sync': False})
    result = benchmark.run(cfg, log=lambda _: None)
    assert result['replica_steps'] == [3, 3]
    assert len(result['replica_images_per_sec']) == 2
    assert result['num_steps'] == 6
    # 1 warm-up + 3 timed steps per replica, one global_step increment each.
    assert result['global_step'] == 8

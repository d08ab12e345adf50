"""Gradient staleness: measured exactly, the remedies' arithmetic, the warm-up wait, refusals."""
import threading

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import benchmark
from tfhp.runner import build
from tfhp import counts as counts_lib
from tfhp import cli
from tfhp import config as config_lib
from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.pipelines import constant
from tfhp.replication import async_replicas
from tfhp.replication import parameter_server
from tfhp.replication import staleness

LR = 0.5
IMAGES = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)  # gradient of the loss: mean row (2, 3)


def _linear(images, labels):
    del labels
    w = tf.get_variable('w', [2], initializer=tf.zeros_initializer())
    logits = images * w
    return tf.reduce_mean(tf.reduce_sum(logits, 1)), logits


def _run_steps(reads, **remedies):
    """Steps a one-tower wrapped parameter server at global step 5, feeding `reads` as each
    step's read of global_step; returns (w after each step, final counters)."""
    topology = topology_lib.Topology.local('cpu', 1)
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        manager = staleness.Staleness(
            parameter_server.ParameterServer(topology.tower_devices, ('/cpu:0',)), '/cpu:0',
            **remedies)
        ops = step.build_train_step(constant.ConstantPipeline(IMAGES, np.zeros([2], np.int32)),
                                    _linear, manager,
                                    lambda: tf.train.GradientDescentOptimizer(LR), topology)
        w = tf.global_variables('w')[0]
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(global_step.assign(5))
            weights = []
            for read in reads:
                sess.run(ops.train_op, {manager.step_reads[0]: read})
                weights.append(sess.run(w))
            return weights, counts_lib.values(sess.run(manager.counters()))


def test_staleness_is_the_updates_between_read_and_apply():
    # Global step 5 then 6: reads 5 (fresh), 3 (3 updates behind), 7 - 7 = 0 again.
    weights, counts = _run_steps([5, 3, 7])
    # Staleness 0, 3, 0: the histogram holds two updates in bin 0 and one in bin 3.
    assert counts == {'staleness_count': 3, 'staleness_sum': 3, 'staleness_max': 3,
                      'stale_gradients_dropped': 0,
                      'staleness_histogram': [2, 0, 0, 1] + [0] * (counts_lib.BINS - 4)}
    np.testing.assert_allclose(weights[-1], [-3 * LR * 2, -3 * LR * 3], rtol=1e-6)
    assert staleness.summary([counts, counts])['staleness_mean'] == 1.0


def test_gradients_older_than_the_threshold_are_dropped():
    weights, counts = _run_steps([5, 3, 6], max_staleness=2)
    np.testing.assert_allclose(weights[0], [-LR * 2, -LR * 3], rtol=1e-6)
    np.testing.assert_allclose(weights[1], weights[0], rtol=1e-6)  # staleness 3 > 2: dropped
    np.testing.assert_allclose(weights[2], [-LR * 2 * 2, -LR * 3 * 2], rtol=1e-6)  # 7 - 6 = 1
    assert counts['stale_gradients_dropped'] == 1 and counts['staleness_count'] == 3


def test_gradients_are_scaled_by_one_over_staleness():
    weights, _ = _run_steps([5, 2], scale_by_staleness=True)
    np.testing.assert_allclose(weights[0], [-LR * 2, -LR * 3], rtol=1e-6)  # 0: unscaled
    np.testing.assert_allclose(weights[1] - weights[0], [-LR * 2 / 4, -LR * 3 / 4],
                               rtol=1e-6)  # global step 6 - 2 = 4


def test_synchronous_steps_measure_zero_and_async_replicas_measure_more():
    sync = benchmark.run(testing.small_config(num_batches=4, device={'num_devices': 2},
                                              staleness={'measure_staleness': True}),
                         log=lambda _: None)
    assert (sync['staleness_count'], sync['staleness_max']) == (5, 0)  # 1 warm-up + 4
    # 40 steps a replica: on a loaded machine the two replicas' threads can run in turns for a
    # while, and each turn alone measures 0.
    asynchronous = benchmark.run(testing.small_config(
        num_batches=40, device={'num_devices': 2}, cluster={'cross_replica_sync': False},
        staleness={'async_warmup_steps': 3}), log=lambda _: None)
    # 3 steps of replica 0 alone, then (1 warm-up + 40) per replica: one count per update.
    assert asynchronous['staleness_count'] == asynchronous['global_step'] == 3 + 2 * 41
    assert asynchronous['num_steps'] == 3 + 2 * 40
    assert asynchronous['staleness_max'] >= 1 and asynchronous['staleness_mean'] > 0


def test_only_asynchronous_or_measured_runs_are_wrapped():
    sync = topology_lib.Topology.local('cpu', 2)
    asynchronous = topology_lib.Topology.local('cpu', 2, synchronous=False)
    make = replication.make_variable_manager
    assert not isinstance(make(config_lib.ReplicationConfig(), sync), staleness.Staleness)
    assert isinstance(make(config_lib.ReplicationConfig(), asynchronous), staleness.Staleness)
    assert isinstance(make(config_lib.ReplicationConfig(variable_update='replicated'), sync,
                           staleness_config=config_lib.StalenessConfig(measure_staleness=True)),
                      staleness.Staleness)


def test_a_joining_replica_waits_for_the_warm_up_steps():
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        increment = global_step.assign_add(1)
        hook = staleness.JoinAfterStepHook(global_step, 3, timeout_s=30, poll_s=0.01)
        with tf.Session() as sess:
            sess.run(global_step.initializer)

            def chief():
                for _ in range(3):
                    sess.run(increment)
            thread = threading.Thread(target=chief)
            thread.start()
            hook.after_create_session(sess, None)
            thread.join()
            assert sess.run(global_step) == 3
        late = staleness.JoinAfterStepHook(global_step, 10, timeout_s=0.2, poll_s=0.01)
        with tf.Session() as sess:
            sess.run(global_step.initializer)
            with pytest.raises(TimeoutError, match='10 warm-up steps.*global step is 0'):
                late.after_create_session(sess, None)


@pytest.mark.parametrize('sections, message', [
    ({'staleness': {'max_gradient_staleness': 2}}, '--max_gradient_staleness apply to '
     'asynchronous training'),
    ({'cluster': {'job_name': 'worker', 'worker_hosts': ('127.0.0.1:2001',),
                  'ps_hosts': ('127.0.0.1:2002',), 'cross_replica_sync': False},
      'replication': {'variable_update': 'distributed_replicated'},
      'staleness': {'scale_stale_gradients': True, 'async_warmup_steps': 5}},
     '--scale_stale_gradients, --async_warmup_steps need --variable_update=parameter_server'),
    ({'staleness': {'measure_staleness': True},
      'cluster': {'job_name': 'worker', 'worker_hosts': ('127.0.0.1:2001',),
                  'ps_hosts': ('127.0.0.1:2002',)}}, '--measure_staleness applies in-graph'),
    ({'cluster': {'job_name': 'worker', 'worker_hosts': ('127.0.0.1:2001', '127.0.0.1:2003'),
                  'ps_hosts': ('127.0.0.1:2002',), 'cross_replica_sync': False},
      'staleness': {'async_warmup_steps': 5}}, 'the chief takes only 4 steps'),
    ({'staleness': {'max_gradient_staleness': -1}}, '--max_gradient_staleness must be >= 0'),
    ({'run': {'max_ckpts_to_keep': -1}}, '--max_ckpts_to_keep must be >= 0'),
])
def test_bad_settings_are_refused_naming_the_flag(sections, message):
    with pytest.raises(config_lib.ConfigError, match=message):
        testing.small_config(**sections)


def test_flags_reach_the_config():
    cli.FLAGS(['tfhp', '--cross_replica_sync=false', '--max_gradient_staleness=4',
               '--scale_stale_gradients', '--async_warmup_steps=20', '--max_ckpts_to_keep=0'])
    try:
        cfg = cli.config_from_flags(cli.FLAGS)
    finally:
        cli.FLAGS.unparse_flags()
    assert cfg.staleness == config_lib.StalenessConfig(
        max_gradient_staleness=4, scale_stale_gradients=True, async_warmup_steps=20)
    assert cfg.run.max_ckpts_to_keep == 0


def test_counters_exist_before_the_graph_is_finalized():
    built = build.build(testing.small_config(device={'num_devices': 2},
                                                 cluster={'cross_replica_sync': False}))
    assert built.graph.finalized
    with tf.Session(graph=built.graph, config=session_lib.config_proto(2)) as sess:
        sess.run(built.init)
        assert counts_lib.values(sess.run(built.manager.counters())) == {
            'staleness_count': 0, 'staleness_sum': 0, 'staleness_max': 0,
            'stale_gradients_dropped': 0, 'staleness_histogram': [0] * counts_lib.BINS}


def test_timed_counts_leave_out_the_warm_up():
    bins = [0] * counts_lib.BINS
    warm = {'staleness_count': 2, 'staleness_sum': 20, 'staleness_max': 16,
            'stale_gradients_dropped': 1, 'dropped_gradients': 2,
            'staleness_histogram': bins[:16] + [2]}
    end = {'staleness_count': 5, 'staleness_sum': 23, 'staleness_max': 16,
           'stale_gradients_dropped': 1, 'dropped_gradients': 3,
           'staleness_histogram': [1, 1, 1] + bins[3:16] + [2]}
    timed = counts_lib.difference(end, warm)
    # The warm-up's two updates of staleness 16+ and its drops are not the timed steps'.
    assert timed == {'staleness_count': 3, 'staleness_sum': 3, 'staleness_max': 2,
                     'stale_gradients_dropped': 0, 'dropped_gradients': 1,
                     'staleness_histogram': [1, 1, 1] + bins[3:]}
    assert counts_lib.summary(timed)['staleness_mean'] == 1.0


def test_async_replicas_built_by_hand_measure_an_update_landing_mid_step():
    """Replica 0 reads global_step, then waits in its forward pass while replica 1 takes a
    whole step; replica 0's update is then one update stale."""
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        manager = async_replicas.AsyncReplicas(
            parameter_server.ParameterServer(('/cpu:0', '/cpu:0'), ('/cpu:0',)), '/cpu:0')
        started = tf.FIFOQueue(1, tf.float32)
        resume = tf.FIFOQueue(1, tf.float32)
        train_ops = []
        for replica in range(2):
            with manager.tower_scope(replica):
                w = tf.get_variable('w', [2], initializer=tf.zeros_initializer())
                images = tf.constant(IMAGES)
                if replica == 0:
                    # After this replica's read of global_step (every tower op follows it).
                    with tf.control_dependencies([started.enqueue(0.0)]):
                        images += resume.dequeue()
                loss = tf.reduce_mean(tf.reduce_sum(images * w, 1))
            [var] = manager.trainable_variables(replica)
            train_ops.append(manager.apply_gradients(
                [[(tf.gradients(loss, var)[0], var)]],
                lambda: tf.train.GradientDescentOptimizer(LR), global_step).train_op)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            thread = threading.Thread(target=sess.run, args=(train_ops[0],))
            thread.start()
            sess.run(started.dequeue())   # replica 0 has read global_step 0
            sess.run(train_ops[1])        # replica 1's update lands: global_step 1
            sess.run(resume.enqueue(0.0))
            thread.join(timeout=60)
            assert not thread.is_alive()
            counts = counts_lib.values(sess.run(manager.counters()))
            assert sess.run(global_step) == 2
            np.testing.assert_allclose(sess.run(w), [-2 * LR * 2, -2 * LR * 3], rtol=1e-6)
    # Replica 1: staleness 0; replica 0: 1.
    assert counts == {'staleness_count': 2, 'staleness_sum': 1, 'staleness_max': 1,
                      'stale_gradients_dropped': 0,
                      'staleness_histogram': [1, 1] + [0] * (counts_lib.BINS - 2)}


def test_between_graph_async_workers_measure_once_with_the_configured_remedies():
    cluster = config_lib.ClusterConfig(job_name='worker', task_index=1,
                                       worker_hosts=('127.0.0.1:2001', '127.0.0.1:2003'),
                                       ps_hosts=('127.0.0.1:2002',), cross_replica_sync=False)
    topology = topology_lib.Topology.between_graph(cluster.jobs(), 1, synchronous=False)
    with tf.Graph().as_default():
        with tf.device(topology.variable_devices[0]):
            global_step = tf.train.get_or_create_global_step()
        manager = replication.make_variable_manager(
            config_lib.ReplicationConfig(), topology, cluster,
            config_lib.StalenessConfig(max_gradient_staleness=0, async_warmup_steps=3))
        assert isinstance(manager, async_replicas.AsyncReplicas)  # not wrapped a second time
        with manager.tower_scope(0):
            w = tf.get_variable('w', [2])
        update = manager.apply_gradients([[(tf.ones([2]), w)]],
                                         lambda: tf.train.GradientDescentOptimizer(LR),
                                         global_step)
        assert sorted(v.op.name for v in tf.local_variables()) == sorted(manager.counters())
        [hook] = update.hooks  # the non-chief waits for the chief's warm-up steps
        assert isinstance(hook, staleness.JoinAfterStepHook) and hook._step == 3
        # The remedy is in the graph: the gradient is scaled by (staleness <= 0).
        assert any(op.name.endswith('LogicalNot') for op in tf.get_default_graph().get_operations())

"""Copies that are right only after an initialising op: a step without that op fails naming it.

Replicated and independent towers (`post_init_ops`), a distributed-replicated worker's local
copies and a collective worker's start from the chief (their session hooks).
"""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.replication import equivalence_test
from tfhp import config as config_lib
from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.replication import collective_workers
from tfhp.replication import distributed_replicated

BATCH_PER_TOWER = 3


def _random_mlp(images, labels):
    """The equivalence tests' perceptron, starting from different random values per tower."""
    return equivalence_test.mlp(images, labels, random_init=True)


def _build_towers(variable_update, num_towers=2):
    topology = topology_lib.Topology.local('cpu', num_towers)
    manager = replication.make_variable_manager(
        config_lib.ReplicationConfig(variable_update=variable_update), topology)
    pipeline = equivalence_test.SlicedPipeline(equivalence_test.IMAGES, equivalence_test.LABELS,
                                               BATCH_PER_TOWER)
    return step.build_train_step(pipeline, _random_mlp, manager, equivalence_test.momentum,
                                 topology)


@pytest.mark.parametrize('variable_update', ['replicated', 'independent'])
def test_forgotten_post_init_ops_fail_the_step_naming_the_op(variable_update):
    with tf.Graph().as_default():
        ops = _build_towers(variable_update)
        [post_init] = ops.post_init_ops
        assert post_init.name == 'copy_from_tower_0'
        copies = [tf.global_variables('v%d/fc0/weights' % t)[0] for t in range(2)]
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run(tf.global_variables_initializer())
            before = sess.run(copies)
            assert np.abs(before[0] - before[1]).max() > 0.1  # the towers start different
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r'never made equal: run the post_init_ops of the variable '
                                     r'manager \(the op `copy_from_tower_0`'):
                sess.run(ops.train_op)
            # The check held the updates back: no copy moved, global_step did not advance.
            for got, want in zip(sess.run(copies), before):
                np.testing.assert_array_equal(got, want)
            assert sess.run(ops.global_step) == 0
            sess.run(ops.post_init_ops)
            for _ in range(3):
                sess.run(ops.train_op)
            assert sess.run(ops.global_step) == 3


def test_once_post_init_ops_ran_replicated_copies_stay_bitwise_equal():
    with tf.Graph().as_default():
        ops = _build_towers('replicated', num_towers=3)
        every = {v.op.name: v for v in tf.global_variables()}
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=3)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(ops.post_init_ops)
            for _ in range(3):
                sess.run(ops.train_op)
            values = sess.run(every)
    copies = [{k[3:]: v for k, v in values.items() if k.startswith('v%d/' % t)}
              for t in range(3)]
    assert len(copies[0]) == 8  # 4 variables + 4 momentum slots
    for t in (1, 2):
        assert set(copies[t]) == set(copies[0])
        for key, value in copies[0].items():
            np.testing.assert_array_equal(copies[t][key], value, err_msg='v%d/%s' % (t, key))
    assert copies[0]['fc0/weights/Momentum'].any()


def test_the_flag_is_not_checkpointed_and_one_tower_has_none():
    with tf.Graph().as_default():
        topology = topology_lib.Topology.local('cpu', 2)
        manager = replication.make_variable_manager(
            config_lib.ReplicationConfig(variable_update='replicated'), topology)
        pipeline = equivalence_test.SlicedPipeline(equivalence_test.IMAGES,
                                                   equivalence_test.LABELS, BATCH_PER_TOWER)
        step.build_train_step(pipeline, equivalence_test.mlp, manager,
                              equivalence_test.momentum, topology)
        assert 'tower_copies_made' in [v.op.name for v in tf.global_variables()]
        assert 'tower_copies_made' not in [v.op.name for v in
                                           manager.savable_variables().values()]
    with tf.Graph().as_default():
        ops = _build_towers('replicated', num_towers=1)
        assert ops.post_init_ops == []
        assert not [op for op in tf.get_default_graph().get_operations()
                    if 'tower_copies_made' in op.name]


def _sgd():
    return tf.train.GradientDescentOptimizer(0.5)


def _one_tower_update(manager):
    """Builds a tower of w ([2], starting at 1) with loss sum(w); returns (Update, w's copy)."""
    global_step = tf.train.get_or_create_global_step()
    with manager.tower_scope(0):
        w = tf.get_variable('w', [2], initializer=tf.ones_initializer())
        loss = tf.reduce_sum(w)
    [var] = manager.trainable_variables(0)
    update = manager.apply_gradients([[(tf.gradients(loss, var)[0], var)]], _sgd, global_step)
    return update, w


def test_a_worker_without_its_refresh_hook_fails_naming_the_fill_op():
    with tf.Graph().as_default():
        manager = distributed_replicated.DistributedReplicated(
            ('/cpu:0',), ('/cpu:1',), '/cpu:0')
        update, copy = _one_tower_update(manager)
        master = tf.global_variables('w')[0]
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            assert sess.run(copy).tolist() == [0.0, 0.0]  # the copy is not filled yet
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match='never filled from the masters: run the op '
                                     '`fill_tower_copies` once per session'):
                sess.run(update.train_op)
            assert sess.run(master).tolist() == [1.0, 1.0]  # nothing was applied
            for hook in update.hooks:
                hook.after_create_session(sess, None)
            sess.run(update.train_op)
            assert sess.run(master).tolist() == [0.5, 0.5]
            assert sess.run(copy).tolist() == [0.5, 0.5]


def test_a_collective_worker_without_its_hook_fails_naming_the_init_op():
    with tf.Graph().as_default():
        manager = collective_workers.CollectiveWorkers(('/cpu:0', '/cpu:1'), 1, True)
        global_step = tf.train.get_or_create_global_step()
        tower_grads = []
        for t in range(2):
            with manager.tower_scope(t):
                w = tf.get_variable('w', [2], initializer=tf.ones_initializer())
                loss = tf.reduce_sum(w)
            [var] = manager.trainable_variables(t)
            tower_grads.append([(tf.gradients(loss, var)[0], var)])
        update = manager.apply_gradients(tower_grads, _sgd, global_step)
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match='never taken from the chief: run the op `init_from_chief`'):
                sess.run(update.train_op)
            for hook in update.hooks:
                hook.after_create_session(sess, None)
            sess.run(update.train_op)
            assert sess.run(w).tolist() == [0.5, 0.5]  # tower 1's copy, refreshed

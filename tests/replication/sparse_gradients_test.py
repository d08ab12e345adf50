"""Sparse (IndexedSlices) gradients through the in-graph parameter server stay sparse and exact."""
import numpy as np
import tensorflow.compat.v1 as tf

from tfhp import session as session_lib
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.pipelines import constant
from tfhp.replication import parameter_server


def _embedding_model(ids, labels):
    table = tf.get_variable('embedding', initializer=np.arange(40, dtype=np.float32)
                            .reshape(10, 4) / 40.0)
    logits = tf.reduce_sum(tf.nn.embedding_lookup(table, ids), [1, 2])
    loss = tf.reduce_mean(tf.square(logits - tf.cast(labels, tf.float32)))
    return loss, tf.stack([logits, -logits], 1)


def _train(num_towers):
    ids = np.array([[1, 2], [3, 3], [9, 0], [2, 5]], np.int32)
    labels = np.array([1, 0, 1, 0], np.int32)
    topo = topology_lib.Topology.local('cpu', num_towers)
    with tf.Graph().as_default():
        manager = parameter_server.ParameterServer(topo.tower_devices, topo.variable_devices)
        ops = step.build_train_step(constant.ConstantPipeline(ids, labels), _embedding_model,
                                    manager, lambda: tf.train.GradientDescentOptimizer(0.5),
                                    topo)
        sparse = [op for op in tf.get_default_graph().get_operations()
                  if op.type == 'ResourceScatterAdd']
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=num_towers)) as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(3):
                sess.run(ops.train_op)
            return sess.run(tf.trainable_variables()[0]), sparse


def test_two_towers_match_one_tower_with_sparse_updates():
    one, sparse_one = _train(1)
    two, sparse_two = _train(2)
    np.testing.assert_allclose(two, one, rtol=1e-6)
    assert sparse_one and sparse_two  # the update is a scatter, not a dense assign
    initial = np.arange(40, dtype=np.float32).reshape(10, 4) / 40.0
    np.testing.assert_array_equal(one[[4, 6, 7, 8]], initial[[4, 6, 7, 8]])  # never looked up
    assert not np.allclose(one[[0, 1, 2]], initial[[0, 1, 2]])

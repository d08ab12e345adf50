"""Staged variable reads: SGD with a one-step-stale gradient, exactly as documented."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.replication import equivalence_test
from tfhp import config as config_lib
from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step
from tfhp import topology as topology_lib

RNG = np.random.RandomState(1)
X = RNG.normal(size=[6, 3]).astype(np.float32)
Y = np.array([0, 1, 1, 0, 1, 0], np.int32)
W0 = RNG.normal(scale=0.3, size=[3, 2]).astype(np.float32)
LR, WD = 0.5, 0.01


def linear(images, labels):
    w = tf.get_variable('fc/weights', initializer=W0)
    logits = tf.matmul(images, w)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=logits))
    return loss, logits


def gradient(w):
    """d/dw of mean cross entropy over the whole batch + WD/2 |w|^2, in numpy."""
    logits = X @ w
    p = np.exp(logits - logits.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    p[np.arange(len(Y)), Y] -= 1.0
    return X.T @ p / len(Y) + WD * w


# tf_cnn_benchmarks' relaxed consistency ("updates show up eventually, likely one step behind")
# is tfhp's staged reads: both settings must build the same step.
STAGED = {'staged_vars': dict(staged_vars=True),
          'relaxed': dict(variable_consistency='relaxed')}


def _build(num_towers, how='staged_vars'):
    topology = topology_lib.Topology.local('cpu', num_towers)
    manager = replication.make_variable_manager(
        config_lib.ReplicationConfig(**STAGED[how]), topology)
    pipeline = equivalence_test.SlicedPipeline(X, Y, len(Y) // num_towers)
    return step.build_train_step(pipeline, linear, manager,
                                 lambda: tf.train.GradientDescentOptimizer(LR), topology,
                                 weight_decay=WD)


@pytest.mark.parametrize('how', sorted(STAGED))
@pytest.mark.parametrize('num_towers', [1, 2])
def test_staged_reads_follow_the_stale_gradient_recurrence(num_towers, how):
    with tf.Graph().as_default():
        ops = _build(num_towers, how)
        weights = tf.global_variables('fc/weights')[0]
        reads = [op for op in tf.get_default_graph().get_operations()
                 if op.name.startswith('tower_0/staging/')]
        assert reads, 'staging ops must sit under the staging stage scope'
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(ops.post_init_ops)
            got = []
            for _ in range(4):
                sess.run(ops.train_op)
                got.append(sess.run(weights))
    # w1 = w0 - lr g(w0); w_{k+1} = w_k - lr g(w_{k-1}).
    want = [W0, W0 - LR * gradient(W0)]
    for _ in range(3):
        want.append(want[-1] - LR * gradient(want[-2]))
    for k, (g, w) in enumerate(zip(got, want[1:])):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-6, err_msg='step %d' % (k + 1))


def test_a_step_without_priming_fails_instead_of_hanging():
    with tf.Graph().as_default():
        ops = _build(1)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match=r'is empty.*post_init_ops of the variable manager '
                                     r'\(prime_staged_vars\)'):
                sess.run(ops.train_op)


def test_relaxed_consistency_needs_the_parameter_server():
    with pytest.raises(config_lib.ConfigError, match='--variable_consistency=relaxed'):
        config_lib.ReplicationConfig(variable_update='replicated',
                                     variable_consistency='relaxed')

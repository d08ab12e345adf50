"""Gradients sent compressed between tasks: what crosses is 16-bit, what is applied is float32."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp import compression
from tfhp import session as session_lib
from tfhp.replication import async_replicas
from tfhp.replication import parameter_server
from tfhp.replication import transfer

WORKER, PS = '/cpu:0', '/cpu:1'  # as a worker's CPU and a ps task's


def _one_step(scheme):
    """The variable after one SGD step of an async worker whose gradient is 1/3 everywhere."""
    with tf.Graph().as_default() as graph:
        global_step = tf.train.get_or_create_global_step()
        manager = async_replicas.AsyncReplicas(
            parameter_server.ParameterServer((WORKER,), (PS,)), WORKER, compression.get(scheme))
        with manager.tower_scope(0):
            w = tf.get_variable('w', [4], initializer=tf.ones_initializer())
            loss = tf.reduce_sum(w) / 3.0
        [var] = manager.trainable_variables(0)
        update = manager.apply_gradients([[(tf.gradients(loss, var)[0], var)]],
                                         lambda: tf.train.GradientDescentOptimizer(1.0),
                                         global_step)
        crossing = [op for op in graph.get_operations()
                    if op.type == 'Cast' and op.device.endswith('CPU:1')]
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            # Local too: the staleness counters AsyncReplicas keeps.
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(update.train_op)
            return sess.run(var), crossing


@pytest.mark.parametrize('dtype, tolerance', [('bfloat16', 2e-3), ('float16', 2e-4)])
def test_a_narrow_gradient_is_widened_on_the_ps_and_applied_in_float32(dtype, tolerance):
    exact, none_cast = _one_step(compression.NONE)
    narrow, [cast] = _one_step(dtype)
    # No cast without a transfer dtype; with one, the ps casts the 16-bit gradient back.
    assert none_cast == []
    assert cast.inputs[0].dtype == tf.as_dtype(dtype) and cast.outputs[0].dtype == tf.float32
    assert cast.inputs[0].op.device.endswith('CPU:0')
    np.testing.assert_allclose(exact, 1 - 1 / 3.0, rtol=1e-6)
    # 1/3 is not exact in 16 bits: the step differs by the dtype's rounding, no more.
    np.testing.assert_allclose(narrow, exact, atol=tolerance)
    assert not np.array_equal(narrow, exact)


def test_sparse_gradients_and_non_floats_are_handled():
    with tf.Graph().as_default():
        slices = tf.IndexedSlices(tf.ones([2, 3]), tf.constant([0, 2]), tf.constant([4, 3]))
        float16 = compression.get('float16')
        narrow = transfer.narrow(slices, float16)
        assert isinstance(narrow, tf.IndexedSlices) and narrow.values.dtype == tf.float16
        var = tf.Variable(tf.zeros([4, 3]))
        assert transfer.widen(narrow, var, float16).values.dtype == tf.float32
        counts = tf.constant([1, 2])
        assert transfer.narrow(counts, float16) is counts
        assert transfer.narrow(None, float16) is None
        assert transfer.narrow(slices, None) is slices
        assert transfer.widen(slices, var, None) is slices

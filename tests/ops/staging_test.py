"""Staging areas: put/get order, sizes on the area's device, and clear errors instead of hangs."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp import session as session_lib
from tfhp.ops import staging


def _counter_source():
    """A variable counting runs: each run of the returned tensor yields 1, 2, 3, ..."""
    counter = tf.Variable(0, dtype=tf.int32, trainable=False, name='counter')
    return counter, counter.assign_add(1)


def test_get_returns_sets_in_put_order_on_the_area_device():
    with tf.Graph().as_default():
        with tf.device('/cpu:0'):
            counter, value = _counter_source()
            tensors = {'x': value, 'y': tf.fill([2, 3], tf.cast(value, tf.float32))}
        staged = staging.stage(tensors, '/cpu:1', name='area')
        assert staged.outputs['y'].shape.as_list() == [2, 3]
        assert staged.size.device.endswith('CPU:1')
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run(counter.initializer)
            sess.run(staged.put_op)
            sess.run(staged.put_op)
            assert sess.run(staged.size) == 2
            first = sess.run(staged.outputs)
            assert first['x'] == 1
            np.testing.assert_array_equal(first['y'], np.ones([2, 3], np.float32))
            assert sess.run(staged.size) == 1
            # A put and a get in one run: the get takes the older set.
            got, _ = sess.run([staged.outputs['x'], staged.put_op])
            assert got == 2
            assert sess.run(staged.size) == 1
            sess.run(staged.clear_op)
            assert sess.run(staged.size) == 0


def test_get_from_an_empty_area_fails_naming_it():
    with tf.Graph().as_default():
        staged = staging.stage(tf.constant([1.0]), '/cpu:0', name='lonely')
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError, match='lonely.* is empty'):
                sess.run(staged.outputs)


def test_put_into_a_full_area_fails_naming_it():
    with tf.Graph().as_default():
        staged = staging.stage(tf.constant([1.0]), '/cpu:0', name='full', capacity=2)
        with tf.Session() as sess:
            sess.run(staged.put_op)
            sess.run(staged.put_op)
            with pytest.raises(tf.errors.InvalidArgumentError, match='full.* already holds 2'):
                sess.run(staged.put_op)


def test_dynamic_shapes_are_refused():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='fully defined'):
            staging.stage(tf.placeholder(tf.float32, [None, 3]), '/cpu:0')

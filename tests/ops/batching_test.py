"""split and stack_towers: rows land in the right tower and row, structures are kept."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp.ops import batching


def test_split_then_stack_towers_round_trips_per_tower():
    values = np.arange(6 * 2, dtype=np.float32).reshape(6, 2)
    with tf.Graph().as_default():
        rows = batching.split(tf.constant(values))
        assert len(rows) == 6
        examples = [{'x': r, 'label': tf.cast(r[0], tf.int32)} for r in rows]
        towers = batching.stack_towers(examples, num_towers=3)
        assert towers[0]['x'].shape.as_list() == [2, 2]
        with tf.Session() as sess:
            got = sess.run(towers)
    for t in range(3):
        np.testing.assert_array_equal(got[t]['x'], values[2 * t:2 * t + 2])
        np.testing.assert_array_equal(got[t]['label'], values[2 * t:2 * t + 2, 0])


def test_uneven_split_is_refused():
    with tf.Graph().as_default():
        rows = batching.split(tf.zeros([5, 2]))
        with pytest.raises(ValueError, match='5 examples do not split evenly over 2 towers'):
            batching.stack_towers(rows, 2)


def test_split_needs_a_static_batch():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='static batch size'):
            batching.split(tf.placeholder(tf.string, [None]))

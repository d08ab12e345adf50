"""Gradient packing: plans group as documented, and pack -> unpack restores every tensor."""
import functools

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp.ops import packing

SHAPES = [(3, 5), (7,), (1,), (2, 2, 3), (40,), (9,)]


def _tensors(dtypes=None):
    dtypes = dtypes or [tf.float32] * len(SHAPES)
    return [tf.constant(np.arange(np.prod(s)).reshape(s) + 100 * i, dtype=d)
            for i, (s, d) in enumerate(zip(SHAPES, dtypes))]


def test_concat_into_makes_equal_packs_per_dtype():
    with tf.Graph().as_default():
        tensors = _tensors([tf.float32, tf.float32, tf.float16, tf.float32, tf.float16,
                            tf.float32])
        plan = packing.concat_into(tensors, num_packs=3)
        assert [b.indices for b in plan.buffers] == [[0, 1, 3, 5], [2, 4]]
        packed = packing.pack(tensors, plan)
        # float32: 15 + 7 + 12 + 9 = 43 elements -> 15, 14, 14; float16: 1 + 40 -> 14, 14, 13.
        assert [int(p.shape[0]) for p in packed] == [15, 14, 14, 14, 14, 13]


def test_group_small_respects_byte_and_count_limits():
    with tf.Graph().as_default():
        tensors = _tensors()  # bytes: 60, 28, 4, 48, 160, 36
        plan = packing.group_small(tensors, max_bytes=100, max_group=2)
        assert [b.indices for b in plan.buffers] == [[0, 1], [2, 3], [4], [5]]
        plan = packing.group_small(tensors, max_bytes=100, max_group=10)
        # 60 + 28 + 4 = 92 <= 100; 48 would overflow; 160 is large and stays alone.
        assert [b.indices for b in plan.buffers] == [[0, 1, 2], [3], [4], [5]]
        assert all(b.num_splits == 1 for b in plan.buffers)


def test_buckets_fill_in_backward_order():
    with tf.Graph().as_default():
        tensors = _tensors()  # bytes: 60, 28, 4, 48, 160, 36
        plan = packing.buckets(tensors, bucket_bytes=100)
        # Last first: 36; 160 would overflow and is larger than a bucket, so it passes alone;
        # 48 + 4 + 28 = 80 <= 100; 60 would overflow and opens the last bucket.
        assert [b.indices for b in plan.buffers] == [[5], [4], [3, 2, 1], [0]]
        assert all(b.num_splits == 1 for b in plan.buffers)
        # A tensor of exactly a bucket fills one; one bucket of everything when it all fits.
        assert [b.indices for b in packing.buckets(tensors, 48).buffers] == [
            [5], [4], [3], [2, 1], [0]]
        assert [b.indices for b in packing.buckets(tensors, 1 << 20).buffers] == [
            [5, 4, 3, 2, 1, 0]]
        # Another dtype closes the bucket.
        mixed = _tensors([tf.float32, tf.float32, tf.int32, tf.float32, tf.float32, tf.float32])
        assert [b.indices for b in packing.buckets(mixed, 100).buffers] == [
            [5], [4], [3], [2], [1, 0]]
        with pytest.raises(ValueError, match='bucket_bytes'):
            packing.buckets(tensors, 0)


@pytest.mark.parametrize('make_plan', [
    functools.partial(packing.concat_into, num_packs=1),
    functools.partial(packing.concat_into, num_packs=4),
    functools.partial(packing.concat_into, num_packs=1000),
    functools.partial(packing.group_small, max_bytes=64, max_group=3),
    functools.partial(packing.buckets, bucket_bytes=64),
    functools.partial(packing.buckets, bucket_bytes=1),
])
def test_unpack_inverts_pack(make_plan):
    with tf.Graph().as_default():
        tensors = _tensors([tf.float32, tf.int32, tf.float32, tf.float32, tf.int32, tf.float32])
        plan = make_plan(tensors)
        restored = packing.unpack(packing.pack(tensors, plan), plan)
        with tf.Session() as sess:
            want, got = sess.run([tensors, restored])
    for w, g in zip(want, got):
        assert w.dtype == g.dtype
        np.testing.assert_array_equal(w, g)


def test_unknown_shapes_are_refused_by_name():
    with tf.Graph().as_default():
        unknown = tf.placeholder(tf.float32, [None, 3], name='dynamic')
        with pytest.raises(ValueError, match='dynamic'):
            packing.concat_into([unknown], 2)

"""The schemes that cannot be summed (sign, top-k, random-k): exact packing and selection, error
feedback that loses nothing, and payloads of the size their wire_ratio says."""
import math

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp import compression
from tfhp.compression import sign

EF_SCHEMES = ('sign', 'topk', 'randomk')
NOEF_SCHEMES = ('sign_noef', 'topk_noef')


def _round_trip(compressor, value):
    """(payload, decompressed) of `value` through `compressor`, evaluated."""
    with tf.Graph().as_default(), tf.Session() as sess:
        tensor = tf.constant(value)
        payload = compressor.compress(tensor)
        return sess.run((payload, compressor.decompress(payload, tf.float32, tensor.shape)))


def test_the_registry_names_the_new_schemes_none_summable():
    assert compression.names()[3:] == ('sign', 'sign_noef', 'topk', 'topk_noef', 'randomk')
    for name in EF_SCHEMES + NOEF_SCHEMES:
        compressor = compression.get(name)
        assert compressor.name == name and not compressor.summable
        assert compressor.error_feedback == (name in EF_SCHEMES)


@pytest.mark.parametrize('n', [1, 7, 8, 13, 1001])
def test_sign_packing_round_trips_exactly(n):
    bits = np.random.RandomState(n).randint(0, 2, n).astype(np.uint8)
    with tf.Graph().as_default(), tf.Session() as sess:
        packed = sign.pack(tf.constant(bits))
        got_packed, got_bits = sess.run((packed, sign.unpack(packed, n)))
    assert got_packed.dtype == np.uint8 and got_packed.shape == (math.ceil(n / 8),)
    np.testing.assert_array_equal(got_bits, bits)


def test_sign_sends_bit_j_of_byte_i_for_element_8i_plus_j_and_the_mean_magnitude():
    value = np.array([[1.0, -2.0, 3.0, 0.5], [-0.5, -1.0, 0.0, 2.0], [-4.0, 1.0, 1.0, 1.0]],
                     np.float32)
    (bits, scale), back = _round_trip(compression.get('sign'), value)
    # Elements 0-7: + - + + - - + +  -> 1 + 4 + 8 + 64 + 128; elements 8-11: - + + + -> 14.
    np.testing.assert_array_equal(bits, [205, 14])
    assert scale == pytest.approx(np.abs(value).mean())
    np.testing.assert_allclose(back, np.where(value >= 0, 1.0, -1.0) * np.abs(value).mean(),
                               rtol=1e-6)


@pytest.mark.parametrize('n, k', [(7, 1), (1000, 10), (1050, 11)])
def test_topk_keeps_exactly_the_k_largest_magnitudes(n, k):
    rng = np.random.RandomState(n)
    value = (rng.permutation(n) + 1.0).astype(np.float32) * rng.choice([-1, 1], n)
    (values, indices), back = _round_trip(compression.get('topk'), value)
    assert values.shape == indices.shape == (k,) and indices.dtype == np.int32
    largest = np.argsort(np.abs(value))[-k:]
    assert sorted(indices) == sorted(largest)
    np.testing.assert_array_equal(back[largest], value[largest])
    assert np.count_nonzero(back) == k


@pytest.mark.parametrize('name', ['topk', 'topk_noef', 'randomk'])
def test_the_fraction_sets_how_many_elements_a_sparse_scheme_sends(name):
    value = np.arange(1, 1001, dtype=np.float32)
    compressor = compression.get(name, 0.05)
    (values, indices), back = _round_trip(compressor, value)
    assert values.shape == indices.shape == (50,)
    assert compressor.wire_ratio == pytest.approx(2 * 0.05)  # a value and an index each
    np.testing.assert_array_equal(back[indices], value[indices])


def test_a_fraction_is_refused_for_a_scheme_that_sends_every_element_naming_the_flag():
    for name in ('none', 'sign', 'float16'):
        with pytest.raises(ValueError, match='--compression_fraction applies to the schemes '
                           'that send a share of the elements \\(topk, topk_noef, randomk\\), '
                           'not to --gradient_compression=%s' % name):
            compression.get(name, 0.1)


def test_randomk_sends_k_distinct_uniformly_drawn_elements_exactly():
    n, draws = 200, 300  # k = 2 of 200 per draw
    value = np.arange(1, n + 1, dtype=np.float32)
    compressor = compression.get('randomk')
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(1)
        tensor = tf.constant(value)
        payload = compressor.compress(tensor)
        back = compressor.decompress(payload, tf.float32, tensor.shape)
        counts = np.zeros(n)
        for _ in range(draws):
            (values, indices), dense = sess.run((payload, back))
            assert len(set(indices)) == 2
            np.testing.assert_array_equal(values, value[indices])
            np.testing.assert_array_equal(dense[indices], value[indices])
            assert np.count_nonzero(dense) == 2
            counts[indices] += 1
    # Each element is drawn 3 times on average (600 draws over 200 elements): a uniform draw
    # leaves few unseen (e**-3 of them: ~10) and none drawn often (P(>= 13) < 1e-5 each).
    assert (counts == 0).sum() < 25 and counts.max() < 13


def _sent_and_residual(name, grads):
    """Feeds `grads` to one gradient's `send`, step by step; returns (sum of what was sent,
    the residual after the last step, the local variables `send` made)."""
    compressor = compression.get(name)
    with tf.Graph().as_default(), tf.Session() as sess:
        tf.set_random_seed(2)
        grad = tf.placeholder(tf.float32, grads[0].shape)
        sent = compressor.decompress(compressor.send(grad), tf.float32, grad.shape)
        state = tf.local_variables()
        sess.run(tf.local_variables_initializer())
        total = sum(sess.run(sent, {grad: g}) for g in grads)
        return total, sess.run(state), state


@pytest.mark.parametrize('name', EF_SCHEMES)
def test_error_feedback_loses_nothing_what_was_sent_plus_the_residual_is_the_gradients(name):
    rng = np.random.RandomState(3)
    grads = [rng.normal(size=(10, 30)).astype(np.float32) for _ in range(5)]
    sent, [residual], [variable] = _sent_and_residual(name, grads)
    assert 'error_feedback_residual' in variable.op.name
    np.testing.assert_allclose(sent + residual, np.sum(grads, axis=0), atol=1e-5)
    # Compression did leave something out, still held for later.
    assert np.abs(residual).max() > 0.1


@pytest.mark.parametrize('name', NOEF_SCHEMES)
def test_without_error_feedback_what_is_left_out_is_lost(name):
    rng = np.random.RandomState(3)
    grads = [rng.normal(size=(10, 30)).astype(np.float32) for _ in range(5)]
    sent, residuals, _ = _sent_and_residual(name, grads)
    assert residuals == []
    assert np.abs(sent - np.sum(grads, axis=0)).max() > 1.0


@pytest.mark.parametrize('name', EF_SCHEMES)
def test_the_payload_bytes_are_what_wire_ratio_says(name):
    n = 3200  # float32: 12800 bytes
    compressor = compression.get(name)
    with tf.Graph().as_default():
        payload = compressor.compress(tf.zeros([40, 80]))
        nbytes = sum(t.shape.num_elements() * t.dtype.size for t in payload)
    # sign: 400 bytes of bits and a 4-byte scale; top-k, random-k: 32 values and 32 indices.
    assert nbytes == {'sign': 404, 'topk': 256, 'randomk': 256}[name]
    assert abs(nbytes - compressor.wire_ratio * 4 * n) <= 4


def _sgd_on_payloads(compressor, grads, rate=0.1):
    """The weights after SGD at `rate` on what `compressor.send` makes of `grads`, step by step
    (the weights start at zero)."""
    with tf.Graph().as_default(), tf.Session() as sess:
        grad = tf.placeholder(tf.float32, grads[0].shape)
        weights = tf.Variable(tf.zeros(grads[0].shape))
        sent = compressor.decompress(compressor.send(grad), tf.float32, grad.shape)
        step = tf.train.GradientDescentOptimizer(rate).apply_gradients([(sent, weights)])
        sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
        for g in grads:
            sess.run(step, {grad: g})
        return sess.run(weights)


def test_momentum_on_the_sender_with_sgd_is_the_momentum_optimizer():
    """Momentum correction of a lossless payload is momentum SGD: the sender's velocity is the
    optimizer's accumulator. (float16 holds every velocity here exactly: quarters, halved.)"""
    rng = np.random.RandomState(5)
    grads = [rng.randint(-8, 8, size=(4, 6)).astype(np.float32) / 4 for _ in range(4)]
    corrected = _sgd_on_payloads(compression.get('float16', momentum=0.5), grads)
    with tf.Graph().as_default(), tf.Session() as sess:
        grad = tf.placeholder(tf.float32, grads[0].shape)
        weights = tf.Variable(tf.zeros(grads[0].shape))
        step = tf.train.MomentumOptimizer(0.1, 0.5).apply_gradients([(grad, weights)])
        sess.run(tf.global_variables_initializer())
        for g in grads:
            sess.run(step, {grad: g})
        momentum = sess.run(weights)
    np.testing.assert_allclose(corrected, momentum, atol=1e-6)
    # Without the sender's momentum the same SGD steps differ: the test can fail.
    assert np.abs(_sgd_on_payloads(compression.get('float16'), grads) - momentum).max() > 0.1


def test_momentum_correction_masks_the_velocity_of_what_a_sparse_scheme_sent():
    compressor = compression.get('topk', fraction=0.25, momentum=0.5)
    with tf.Graph().as_default(), tf.Session() as sess:
        grad = tf.placeholder(tf.float32, [4])
        payload = compressor.send(grad)
        [velocity] = [v for v in tf.local_variables() if 'velocity' in v.op.name]
        [residual] = [v for v in tf.local_variables() if 'residual' in v.op.name]
        sess.run(tf.local_variables_initializer())
        values, indices = sess.run(payload, {grad: [1.0, -4.0, 2.0, 0.5]})
        assert [list(values), list(indices)] == [[-4.0], [1]]
        # The element sent restarts; the others keep u = g, their residual g as well.
        np.testing.assert_array_equal(sess.run(velocity), [1.0, 0.0, 2.0, 0.5])
        np.testing.assert_array_equal(sess.run(residual), [1.0, 0.0, 2.0, 0.5])
        # Next step: u = 0.5 u + g; r + u is compressed: element 2 (2 + 3 = 5) goes.
        values, indices = sess.run(payload, {grad: [0.0, 0.0, 2.0, 0.0]})
        assert [list(values), list(indices)] == [[5.0], [2]]
        np.testing.assert_array_equal(sess.run(velocity), [0.5, 0.0, 0.0, 0.25])


def test_momentum_correction_is_refused_where_it_cannot_work_naming_the_flag():
    with pytest.raises(ValueError, match=r'--momentum_correction must be in \[0, 1\), got 1'):
        compression.get('topk', momentum=1.0)
    with pytest.raises(ValueError, match='without --gradient_compression use '
                                         '--optimizer=momentum'):
        compression.get('none', momentum=0.9)

"""LayerBuilder pieces that run on the CPU in both layouts: batch norm updates, flatten."""
import numpy as np
import tensorflow.compat.v1 as tf

from tfhp.models import layers


def _moving_stats_after_one_update(fused, x):
    with tf.Graph().as_default():
        builder = layers.LayerBuilder(is_training=True, fuse_batchnorm=fused, bn_decay=0.5)
        y = builder.batch_norm(tf.constant(x))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            out, _ = sess.run([y, tf.get_collection(layers.BN_UPDATE_OPS)])
            mean, variance = sess.run([v for v in tf.global_variables()
                                       if 'moving' in v.op.name])
    return out, mean, variance


def test_fused_and_composite_update_the_same_moving_statistics():
    x = np.random.RandomState(0).normal(2.0, 3.0, size=[2, 2, 2, 3]).astype(np.float32)
    fused = _moving_stats_after_one_update(True, x)
    composite = _moving_stats_after_one_update(False, x)
    for a, b in zip(fused, composite):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    # decay 0.5 from (0, 1): half the batch mean, half of 1 + the unbiased batch variance.
    flat = x.reshape(-1, 3)
    np.testing.assert_allclose(composite[1], 0.5 * flat.mean(0), rtol=1e-5)
    np.testing.assert_allclose(composite[2], 0.5 + 0.5 * flat.var(0, ddof=1), rtol=1e-4)


def test_flatten_gives_the_same_features_in_both_layouts():
    x = np.arange(2 * 3 * 4 * 5, dtype=np.float32).reshape(2, 3, 4, 5)  # NHWC
    with tf.Graph().as_default(), tf.Session() as sess:
        nhwc = sess.run(layers.LayerBuilder(layers.NHWC).flatten(tf.constant(x)))
        nchw = sess.run(layers.LayerBuilder(layers.NCHW).flatten(
            tf.constant(x.transpose(0, 3, 1, 2))))
    np.testing.assert_array_equal(nhwc, nchw)
    np.testing.assert_array_equal(nhwc, x.reshape(2, -1))


def _conv_with_explicit_padding(x, kernel, strides, padding):
    """(builder's output, the output of tf.pad + VALID with the same weights, Pad op count)."""
    with tf.Graph().as_default(), tf.Session() as sess:
        builder = layers.LayerBuilder(layers.NHWC)
        y = builder.conv(tf.constant(x), 4, kernel, strides=strides, padding=padding,
                         activation=None)
        (weights,) = [v for v in tf.global_variables() if v.op.name.endswith('weights')]
        pads = [[0, 0], [padding, padding], [padding, padding], [0, 0]]
        expected = tf.nn.conv2d(tf.pad(tf.constant(x), pads), weights, strides, 'VALID')
        num_pads = len([op for op in tf.get_default_graph().get_operations()
                        if op.type == 'Pad'])
        sess.run(tf.global_variables_initializer())
        return sess.run(y), sess.run(expected), num_pads - 1   # less the reference's own


def test_explicit_padding_is_built_as_same_where_it_pads_the_same():
    x = np.random.RandomState(0).normal(size=[2, 6, 6, 3]).astype(np.float32)
    # Stride 1, kernel 2p + 1: 'SAME' pads p on each side; no Pad op is built.
    for kernel, padding in ((3, 1), (5, 2)):
        out, expected, num_pads = _conv_with_explicit_padding(x, kernel, 1, padding)
        assert num_pads == 0 and out.shape == (2, 6, 6, 4)
        np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)
    # Stride 2 on an even size: 'SAME' would pad (0, 1), not (1, 1): the Pad op stays.
    out, expected, num_pads = _conv_with_explicit_padding(x, 3, 2, 1)
    assert num_pads == 1 and out.shape == (2, 3, 3, 4)
    np.testing.assert_allclose(out, expected, rtol=1e-5, atol=1e-5)

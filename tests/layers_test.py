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

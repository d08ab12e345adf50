"""LayerBuilder pieces that run on the CPU in both layouts: batch norm updates, flatten, dense
layers in slices."""
import numpy as np
import tensorflow.compat.v1 as tf

from tfhp.models import layers
from tfhp.models import slices


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


def test_slice_widths_are_the_fewest_within_the_bytes_and_as_equal_as_can_be():
    # lenet's dense0: 512 units of 3136 float32 weights each, 6.4 MB.
    widths = slices.widths(512, 3136 * 4, 262144)
    assert len(widths) == 26 and sum(widths) == 512 and set(widths) == {19, 20}
    assert 20 * 3136 * 4 <= 262144 < 21 * 3136 * 4  # 25 slices would need 21 units in one
    assert slices.widths(512, 3136 * 4, 0) == [512]
    assert slices.widths(512, 3136 * 4, 512 * 3136 * 4) == [512]
    assert slices.widths(3, 100, 10) == [1, 1, 1]  # a unit wider than a slice: one a slice


def _dense(slice_bytes, x, weights=None):
    """Outputs, [d out / d weight] and the variables of a dense layer (10 -> 6 units) on x;
    `weights` ([10, 6] and [6]) are cut into the built layer's columns."""
    with tf.Graph().as_default():
        builder = layers.LayerBuilder(slice_bytes=slice_bytes)
        inputs = tf.constant(x)
        y = builder.dense(inputs, 6, activation=None)
        variables = tf.trainable_variables()
        grads = tf.gradients(tf.reduce_sum(y * y), variables)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            if weights is not None:
                start = 0
                for kernel, bias in zip(variables[::2], variables[1::2]):
                    width = int(kernel.shape[1])
                    kernel.load(weights[0][:, start:start + width], sess)
                    bias.load(weights[1][start:start + width], sess)
                    start += width
            return sess.run([y, grads, variables]) + [[v.op.name for v in variables]]


def test_a_sliced_dense_layer_computes_the_whole_one_and_its_gradients():
    rng = np.random.RandomState(0)
    x = rng.normal(size=[4, 10]).astype(np.float32)
    weights = (rng.normal(size=[10, 6]).astype(np.float32),
               rng.normal(size=[6]).astype(np.float32))
    whole, whole_grads, _, whole_names = _dense(0, x, weights)
    # 2 units of 10 float32 weights a slice: 80 bytes.
    sliced, sliced_grads, _, names = _dense(80, x, weights)
    assert whole_names == ['dense0/weights', 'dense0/biases']
    assert names == ['dense0/slice%d/%s' % (k, v) for k in range(3)
                     for v in ('weights', 'biases')]
    np.testing.assert_allclose(sliced, whole, rtol=1e-5)
    np.testing.assert_allclose(np.concatenate(sliced_grads[::2], 1), whole_grads[0], rtol=1e-5)
    np.testing.assert_allclose(np.concatenate(sliced_grads[1::2]), whole_grads[1], rtol=1e-5)


def test_a_slice_draws_its_weights_as_the_whole_layer_would():
    x = np.zeros([1, 3136], np.float32)
    with tf.Graph().as_default():
        builder = layers.LayerBuilder(slice_bytes=262144)
        builder.dense(tf.constant(x), 512)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            kernels = sess.run([v for v in tf.trainable_variables()
                                if v.op.name.endswith('weights')])
    assert len(kernels) == 26
    # Glorot uniform over the whole layer: std sqrt(2 / (3136 + 512)), not over a slice's
    # 20 outputs (std 0.0252, 7.5% more).
    np.testing.assert_allclose(np.concatenate(kernels, 1).std(), np.sqrt(2.0 / 3648), rtol=0.01)

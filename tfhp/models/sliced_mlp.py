"""A wide multi-layer perceptron that can be split into vertical slices over devices.

Model parallelism in the style of the original two-GPU AlexNet: every hidden layer's units are
split into `len(devices)` slices, slice d (its weights and its matmul) lives on device d, and the
slices' outputs are concatenated (an all-gather of activations) before the next layer. With one
device it is the plain network. Weights come from a seeded numpy initialiser, so the sliced and
the unsliced network hold exactly the same function and train identically.
"""
import numpy as np
import tensorflow.compat.v1 as tf


def initial_weights(input_units, widths, num_classes, seed=0):
    """Seeded numpy weights [(w, b), ...] for every layer (hidden widths, then the logits)."""
    rng = np.random.RandomState(seed)
    shapes = list(zip([input_units] + list(widths), list(widths) + [num_classes]))
    return [(rng.normal(0.0, np.sqrt(2.0 / n_in), [n_in, n_out]).astype(np.float32),
             np.zeros([n_out], np.float32)) for n_in, n_out in shapes]


def build(images, weights, devices):
    """Logits of the MLP with every layer split into len(devices) column slices.

    Args:
      images: [batch, ...] float input (flattened here).
      weights: from `initial_weights`; every width must divide by len(devices).
      devices: one device per slice, e.g. ('/cpu:0', '/cpu:1').
    Returns:
      [batch, num_classes] logits.
    Raises:
      ValueError: a layer's width does not split evenly over the devices (names the layer).
    """
    x = tf.reshape(images, [int(images.shape[0]), -1])
    num_slices = len(devices)
    for index, (w, b) in enumerate(weights):
        width = w.shape[1]
        if width % num_slices:
            raise ValueError('layer %d has %d units, which do not split over %d devices'
                             % (index, width, num_slices))
        size = width // num_slices
        parts = []
        for d, device in enumerate(devices):
            with tf.device(device), tf.variable_scope('layer%d/slice%d' % (index, d)):
                w_d = tf.get_variable('weights', initializer=w[:, d * size:(d + 1) * size])
                b_d = tf.get_variable('biases', initializer=b[d * size:(d + 1) * size])
                y = tf.matmul(x, w_d) + b_d
                parts.append(tf.nn.relu(y) if index < len(weights) - 1 else y)
        x = parts[0] if num_slices == 1 else tf.concat(parts, 1)
    return x

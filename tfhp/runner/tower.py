"""One tower's forward pass and loss: a registered model, softmax cross entropy, L2 decay."""
import time

import numpy as np
import tensorflow.compat.v1 as tf

from tfhp.models import layers


def _after_sleep(tensor, delay_s, device):
    """`tensor`, passed on only after a sleep of delay_s on `device` that starts once it is
    computed (`make_model_fn`'s straggler delay)."""
    def sleep(value):
        time.sleep(delay_s)
        return np.float32(0.0) * np.float32(value.flat[0])

    with tf.device(device):
        slept = tf.numpy_function(sleep, [tensor], tf.float32, name='straggler_delay')
    with tf.control_dependencies([slept]):
        return tf.identity(tensor)


def make_model_fn(model_spec, num_classes, data_format='NHWC', fuse_batchnorm=True,
                  is_training=True, dtype='float32', variable_dtype='float32', delay_s=0.0,
                  delay_device=None, slice_bytes=0):
    """Returns model_fn(images, labels) -> (cross-entropy loss, logits) for one tower.

    The L2 term is added by the step builder, which knows which variables a tower owns.
    Images of any float dtype are cast to `dtype`, the dtype the model computes in (so a 16-bit
    input pipeline only halves what is staged and copied when the model computes in float32);
    weights are stored in `variable_dtype`, and dense layers of more than slice_bytes built in
    column slices (see `layers.LayerBuilder`). The logits are cast to
    float32, so the softmax and the loss are float32 whatever the model computes in.

    With delay_s, the tower is a straggler slow in compute: the logits pass through a sleep on
    `delay_device` (the worker's CPU) that starts once they are computed, so after every weight
    read of the forward pass; the loss, and so the whole backward pass, waits for it. The
    gradient it delays was computed from weights read before the sleep, as a slow worker's is
    (a sleep before the step would let it read fresh weights after sleeping).
    """
    def model_fn(images, labels):
        images = tf.cast(images, dtype, name='model_input')
        builder = layers.LayerBuilder(data_format=data_format, is_training=is_training,
                                      fuse_batchnorm=fuse_batchnorm, dtype=dtype,
                                      variable_dtype=variable_dtype, slice_bytes=slice_bytes)
        logits = model_spec.build(builder, images, num_classes)
        logits = tf.cast(logits, tf.float32)
        if delay_s:
            logits = _after_sleep(logits, delay_s, delay_device)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits), name='cross_entropy')
        return loss, logits
    return model_fn


def is_decayed(variable):
    """Whether weight decay applies: weights yes; biases and batch-norm parameters no."""
    name = variable.op.name
    return not (name.endswith('/biases') or '/batchnorm/' in name or
                name.startswith('batchnorm/'))


def l2_loss(variables, weight_decay):
    """weight_decay * sum of l2_loss of the decayed variables (0 when there is nothing to decay)."""
    decayed = [v for v in variables if is_decayed(v)]
    if not weight_decay or not decayed:
        return tf.constant(0.0)
    return weight_decay * tf.add_n([tf.nn.l2_loss(tf.cast(v, tf.float32)) for v in decayed])


def count_params(variables):
    """Total number of elements of `variables`."""
    total = 0
    for v in variables:
        size = 1
        for dim in v.shape:
            size *= int(dim)
        total += size
    return total

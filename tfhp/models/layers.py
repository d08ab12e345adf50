"""The one layer builder every model uses: conv (plain and depthwise), dense, pooling, batch
norm (also as a pre-activation), LRN, dropout.

Built from `tf.nn` ops and `tf.compat.v1.get_variable` only (no Keras), so that every op and
variable is visible and placeable by hand. The builder owns the data format: models are written
once and built as NHWC or NCHW by constructing the builder with a different `data_format`.
It owns the precision the same way: weights are stored in `variable_dtype` and cast to `dtype`
where a layer reads them (mixed precision: float32 master weights, float16 or bfloat16 compute),
while batch norm keeps float32 parameters and statistics.

Variables get stable, readable names (`conv0/weights`, `conv0/batchnorm/gamma`, ...) from a
per-builder counter, so that the same model built twice (NHWC and NCHW, or on two towers under a
reusing variable scope) has the same variable names and the weights can be shared or copied.
"""
import collections

import tensorflow.compat.v1 as tf

from tfhp.models import slices

NHWC = 'NHWC'
NCHW = 'NCHW'

# Batch-norm statistics are not trained by gradients; they are updated by these ops, which the
# step builder runs with the train op (from the first tower only, as in the reference benchmarks).
BN_UPDATE_OPS = tf.GraphKeys.UPDATE_OPS


class LayerBuilder:
    """Builds layers in one data format, naming variables by a per-kind counter.

    Args:
      data_format: 'NHWC' or 'NCHW'; images given to the model must already be in it.
      is_training: batch norm uses batch statistics and dropout drops when True.
      fuse_batchnorm: use the fused kernel (`tf.nn.fused_batch_norm`) rather than the composite
        moments + normalize ops; both compute the same function.
      bn_decay: decay of the moving mean and variance.
      bn_epsilon: variance epsilon.
      dtype: the dtype layers compute in (inputs must already be in it): float32, float16 or
        bfloat16.
      variable_dtype: the dtype weights and biases are stored in (float32 master weights by
        default; float16 for tf_cnn_benchmarks' --fp16_vars). Batch-norm variables are float32
        whatever it is: the fused kernel takes float32 parameters for 16-bit inputs.
      slice_bytes: a dense layer whose weights take more bytes is built as column slices of
        at most this many bytes (`tfhp.models.slices`: variables '<layer>/slice<k>/weights'
        and '.../biases'); 0: never.
    """

    def __init__(self, data_format=NHWC, is_training=True, fuse_batchnorm=True,
                 bn_decay=0.997, bn_epsilon=1e-5, dtype=tf.float32, variable_dtype=tf.float32,
                 slice_bytes=0):
        if data_format not in (NHWC, NCHW):
            raise ValueError('data_format must be NHWC or NCHW, got %r' % (data_format,))
        self.data_format = data_format
        self.is_training = is_training
        self.fuse_batchnorm = fuse_batchnorm
        self.bn_decay = bn_decay
        self.bn_epsilon = bn_epsilon
        self.dtype = tf.as_dtype(dtype)
        self.variable_dtype = tf.as_dtype(variable_dtype)
        self.slice_bytes = slice_bytes
        self._counts = collections.Counter()

    # -- shapes -------------------------------------------------------------------------------

    @property
    def channel_axis(self):
        """The axis that holds channels in this builder's data format."""
        return 3 if self.data_format == NHWC else 1

    def channels(self, x):
        """Static number of channels of a 4-D tensor."""
        return int(x.shape[self.channel_axis])

    def _unique(self, kind, name):
        if name:
            return name
        index = self._counts[kind]
        self._counts[kind] += 1
        return '%s%d' % (kind, index)

    def _window(self, size):
        # tf.nn pooling/conv take 4-element ksize/strides in the data format's order.
        if isinstance(size, int):
            size = (size, size)
        if self.data_format == NHWC:
            return [1, size[0], size[1], 1]
        return [1, 1, size[0], size[1]]

    def _weight(self, name, shape, initializer):
        """A new weight variable (in variable_dtype), as read in the compute dtype.

        Gradients flow through the cast back to the stored variable, so the optimizer updates
        the master copy in its own dtype.
        """
        variable = tf.get_variable(name, shape, dtype=self.variable_dtype,
                                   initializer=initializer)
        if variable.dtype.base_dtype == self.dtype:
            return variable
        return tf.cast(variable, self.dtype)

    # -- layers -------------------------------------------------------------------------------

    def conv(self, x, filters, kernel, strides=1, padding='SAME', activation=tf.nn.relu,
             batch_norm=False, use_bias=None, stddev=None, name=None):
        """2-D convolution, then optional batch norm (replacing the bias), then activation.

        Args:
          x: 4-D input in the builder's data format.
          filters: output channels.
          kernel: int or (height, width).
          strides: int or (height, width).
          padding: 'SAME', 'VALID', or an int of explicit symmetric spatial padding (applied
            with tf.pad, then VALID), as ResNet and AlexNet need.
          activation: a function, or None for linear.
          batch_norm: follow the convolution with batch norm.
          use_bias: defaults to `not batch_norm`.
          stddev: truncated-normal init stddev; default is variance scaling (He init).
          name: variable scope; default `conv<k>`.
        Returns:
          The output tensor.
        """
        name = self._unique('conv', name)
        if isinstance(kernel, int):
            kernel = (kernel, kernel)
        if use_bias is None:
            use_bias = not batch_norm
        in_channels = self.channels(x)
        if stddev is None:
            init = tf.variance_scaling_initializer(scale=2.0, mode='fan_in')
        else:
            init = tf.truncated_normal_initializer(stddev=stddev)
        with tf.variable_scope(name):
            weights = self._weight('weights', [kernel[0], kernel[1], in_channels, filters],
                                   init)
            x, padding = self._padded(x, kernel, strides, padding)
            y = tf.nn.conv2d(x, weights, self._window(strides), padding,
                             data_format=self.data_format)
            if use_bias:
                y = self._bias(y, filters)
            if batch_norm:
                y = self.batch_norm(y)
            if activation is not None:
                y = activation(y)
        return y

    def depthwise_conv(self, x, kernel, strides=1, padding='SAME', activation=tf.nn.relu,
                       batch_norm=False, name=None):
        """Depthwise 2-D convolution (one filter per input channel), as MobileNet uses.

        Args:
          x: 4-D input in the builder's data format.
          kernel: int or (height, width).
          strides: int or (height, width).
          padding: 'SAME', 'VALID', or an int of explicit symmetric spatial padding.
          activation: a function, or None for linear.
          batch_norm: follow the convolution with batch norm (and no bias).
          name: variable scope; default `depthwise<k>`.
        Returns:
          The output tensor, with as many channels as `x`.
        """
        name = self._unique('depthwise', name)
        if isinstance(kernel, int):
            kernel = (kernel, kernel)
        channels = self.channels(x)
        with tf.variable_scope(name):
            # A depthwise filter's fan-in is its window alone: He init over kernel area.
            weights = self._weight(
                'weights', [kernel[0], kernel[1], channels, 1],
                tf.variance_scaling_initializer(scale=2.0, mode='fan_in'))
            x, padding = self._padded(x, kernel, strides, padding)
            y = tf.nn.depthwise_conv2d(x, weights, self._window(strides), padding,
                                       data_format=self.data_format)
            if batch_norm:
                y = self.batch_norm(y)
            else:
                y = self._bias(y, channels)
            if activation is not None:
                y = activation(y)
        return y

    def _padded(self, x, kernel, strides, padding):
        """(x, padding) for tf.nn's convolutions: an int `padding` becomes 'SAME' where that
        pads the same (stride 1 and a kernel of 2 * padding + 1: (k - 1) / 2 on each side),
        else an explicit tf.pad and 'VALID'."""
        if not isinstance(padding, int):
            return x, padding
        if strides in (1, (1, 1)) and kernel == (2 * padding + 1,) * 2:
            # Perf: no Pad op forward and no Slice backward (ResNet-50: 26 ms of a 1.9 s
            # traced step), and the convolution's neighbours can fuse with it.
            return x, 'SAME'
        pads = [[0, 0]] * 4
        for axis in ((1, 2) if self.data_format == NHWC else (2, 3)):
            pads[axis] = [padding, padding]
        return tf.pad(x, pads), 'VALID'

    def _bias(self, y, size):
        biases = self._weight('biases', [size], tf.zeros_initializer())
        return tf.nn.bias_add(y, biases, data_format=self.data_format if y.shape.ndims == 4
                              else None)

    def dense(self, x, units, activation=tf.nn.relu, stddev=None, name=None):
        """Fully connected layer on a 2-D input (flatten first); in column slices when its
        weights take more than `slice_bytes`."""
        name = self._unique('dense', name)
        in_units = int(x.shape[-1])
        widths = slices.widths(units, in_units * self.variable_dtype.size, self.slice_bytes)

        def affine(width):
            if stddev is None:
                # Glorot uniform over the whole layer's fans, so that a slice draws from what
                # the whole layer would (scale 1 unsliced).
                init = tf.variance_scaling_initializer(
                    scale=(in_units + width) / (in_units + units), mode='fan_avg',
                    distribution='uniform')
            else:
                init = tf.truncated_normal_initializer(stddev=stddev)
            weights = self._weight('weights', [in_units, width], init)
            return self._bias(tf.matmul(x, weights), width)

        with tf.variable_scope(name):
            if len(widths) == 1:
                y = affine(units)
            else:
                parts = []
                for index, width in enumerate(widths):
                    with tf.variable_scope(slices.name(index)):
                        parts.append(affine(width))
                y = tf.concat(parts, 1)
            if activation is not None:
                y = activation(y)
        return y

    def max_pool(self, x, size, strides=None, padding='VALID'):
        """Max pooling; `strides` defaults to `size`."""
        return tf.nn.max_pool2d(x, self._window(size), self._window(strides or size), padding,
                                data_format=self.data_format)

    def avg_pool(self, x, size, strides=None, padding='VALID'):
        """Average pooling; `strides` defaults to `size`."""
        return tf.nn.avg_pool2d(x, self._window(size), self._window(strides or size), padding,
                                data_format=self.data_format)

    def global_avg_pool(self, x):
        """Mean over the spatial axes, giving [batch, channels]."""
        axes = [1, 2] if self.data_format == NHWC else [2, 3]
        return tf.reduce_mean(x, axes)

    def flatten(self, x):
        """[batch, ...] -> [batch, prod(...)], channels-last order for either data format.

        Transposing NCHW to NHWC first makes the flattened features (and so the next dense
        layer's weights) the same in both formats.
        """
        if x.shape.ndims == 4 and self.data_format == NCHW:
            x = tf.transpose(x, [0, 2, 3, 1])
        size = 1
        for dim in x.shape[1:]:
            size *= int(dim)
        return tf.reshape(x, [-1, size])

    def pad_channels(self, x, before, after):
        """Appends `before` and `after` all-zero channels on either side of x's channels.

        The parameter-free "option A" shortcut of the CIFAR ResNets widens a block's input
        this way where the block doubles its channels.
        """
        pads = [[0, 0]] * 4
        pads[self.channel_axis] = [before, after]
        return tf.pad(x, pads)

    def concat(self, tensors):
        """Concatenates along the channel axis."""
        return tf.concat(tensors, self.channel_axis)

    def dropout(self, x, keep_prob=0.5):
        """Dropout during training only."""
        if not self.is_training or keep_prob >= 1.0:
            return x
        return tf.nn.dropout(x, rate=1.0 - keep_prob)

    def lrn(self, x, depth_radius=4, bias=1.0, alpha=0.001 / 9.0, beta=0.75):
        """Local response normalisation across channels (no parameters).

        tf.nn.lrn normalises over the last axis only (on CPU and GPU), so an NCHW input is
        transposed to NHWC and back. It has no bfloat16 kernel (TF 2.21's CPU build fails at
        run time), so a bfloat16 input is normalised in float32.
        """
        if self.data_format == NCHW:
            x = tf.transpose(x, [0, 2, 3, 1])
        dtype = x.dtype
        if dtype == tf.bfloat16:
            x = tf.cast(x, tf.float32)
        y = tf.cast(tf.nn.lrn(x, depth_radius=depth_radius, bias=bias, alpha=alpha, beta=beta),
                    dtype)
        if self.data_format == NCHW:
            y = tf.transpose(y, [0, 3, 1, 2])
        return y

    def batch_norm_relu(self, x, name=None):
        """Batch norm then ReLU with no convolution of its own: the pre-activation that ResNet v2
        and DenseNet put before a convolution (and once more before their classifier).

        Variables live under `preact<k>/batchnorm/`, so that they are named like the batch
        norms inside convolutions (and, like them, are not weight-decayed).
        """
        with tf.variable_scope(self._unique('preact', name)):
            return tf.nn.relu(self.batch_norm(x))

    def batch_norm(self, x, scale=True, name='batchnorm'):
        """Batch norm over the channel axis, fused or composite per the builder.

        Trainable `beta` (and `gamma` when `scale`); moving statistics are non-trainable
        variables updated by ops added to `BN_UPDATE_OPS`.
        """
        channels = self.channels(x)
        with tf.variable_scope(name):
            beta = tf.get_variable('beta', [channels], initializer=tf.zeros_initializer())
            if scale:
                gamma = tf.get_variable('gamma', [channels], initializer=tf.ones_initializer())
            else:
                gamma = tf.ones([channels])
            moving_mean = tf.get_variable('moving_mean', [channels], trainable=False,
                                          initializer=tf.zeros_initializer())
            moving_variance = tf.get_variable('moving_variance', [channels], trainable=False,
                                              initializer=tf.ones_initializer())
            if self.fuse_batchnorm:
                y, mean, variance = self._fused(x, gamma, beta, moving_mean, moving_variance)
            else:
                y, mean, variance = self._composite(x, gamma, beta, moving_mean,
                                                    moving_variance)
            if self.is_training:
                decay = self.bn_decay
                tf.add_to_collection(BN_UPDATE_OPS, tf.assign_sub(
                    moving_mean, (1.0 - decay) * (moving_mean - mean)))
                tf.add_to_collection(BN_UPDATE_OPS, tf.assign_sub(
                    moving_variance, (1.0 - decay) * (moving_variance - variance)))
        return y

    def _fused(self, x, gamma, beta, moving_mean, moving_variance):
        if self.is_training:
            y, mean, variance = tf.nn.fused_batch_norm(
                x, gamma, beta, epsilon=self.bn_epsilon, data_format=self.data_format,
                is_training=True)
            return y, mean, variance
        y, _, _ = tf.nn.fused_batch_norm(
            x, gamma, beta, mean=moving_mean, variance=moving_variance,
            epsilon=self.bn_epsilon, data_format=self.data_format, is_training=False)
        return y, moving_mean, moving_variance

    def _composite(self, x, gamma, beta, moving_mean, moving_variance):
        """Moments and normalisation in float32 (16-bit moments lose the small variances)."""
        if x.dtype != tf.float32:
            y, mean, variance = self._composite(tf.cast(x, tf.float32), gamma, beta,
                                                moving_mean, moving_variance)
            return tf.cast(y, x.dtype), mean, variance
        axes = [0, 1, 2] if self.data_format == NHWC else [0, 2, 3]
        shape = [1, 1, 1, -1] if self.data_format == NHWC else [1, -1, 1, 1]
        if not self.is_training:
            y = tf.nn.batch_normalization(
                x, tf.reshape(moving_mean, shape), tf.reshape(moving_variance, shape),
                tf.reshape(beta, shape), tf.reshape(gamma, shape), self.bn_epsilon)
            return y, moving_mean, moving_variance
        mean, variance = tf.nn.moments(x, axes)
        y = tf.nn.batch_normalization(
            x, tf.reshape(mean, shape), tf.reshape(variance, shape), tf.reshape(beta, shape),
            tf.reshape(gamma, shape), self.bn_epsilon)
        # The fused kernel hands back the unbiased (n / (n - 1)) batch variance for the moving
        # average; do the same so both paths update moving_variance identically.
        count = tf.cast(tf.size(x) // tf.shape(x)[self.channel_axis], x.dtype)
        return y, mean, variance * count / tf.maximum(count - 1.0, 1.0)

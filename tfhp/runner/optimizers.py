"""Optimizers and learning-rate schedules (piecewise constant, exponential decay, linear warm-up,
linear scaling)."""
import tensorflow.compat.v1 as tf

from tfhp import config as config_lib
from tfhp.runner import tower


def learning_rate(optimizer_config, base_rate, global_step, global_batch_size,
                  num_examples_per_epoch):
    """The learning-rate tensor for a step.

    Args:
      optimizer_config: a `tfhp.config.OptimizerConfig`.
      base_rate: the rate to use without a piecewise schedule.
      global_step: the global step tensor.
      global_batch_size: images consumed per step by all towers and workers.
      num_examples_per_epoch: epoch size, to turn epochs in the schedule into steps.
    Returns:
      A float32 scalar tensor.
    """
    cfg = optimizer_config
    steps_per_epoch = num_examples_per_epoch / float(global_batch_size)
    step = tf.cast(global_step, tf.float32)
    with tf.name_scope('learning_rate'):
        if cfg.piecewise_learning_rate_schedule:
            boundaries, rates = config_lib.parse_piecewise_schedule(
                cfg.piecewise_learning_rate_schedule)
            boundaries = [int(b * steps_per_epoch) for b in boundaries]
            rate = tf.train.piecewise_constant(global_step, boundaries, rates)
        elif cfg.decays:
            # tf_cnn_benchmarks' decay: a staircase, base * factor^floor(step / decay_steps).
            decay_steps = max(1, int(cfg.num_epochs_per_decay * steps_per_epoch))
            rate = tf.train.exponential_decay(base_rate, global_step, decay_steps,
                                              cfg.learning_rate_decay_factor, staircase=True)
            if cfg.minimum_learning_rate:
                rate = tf.maximum(rate, cfg.minimum_learning_rate)
        else:
            rate = tf.constant(base_rate, tf.float32)
        if cfg.learning_rate_base_batch_size:
            # Linear scaling rule: k times the batch, k times the rate.
            rate *= global_batch_size / float(cfg.learning_rate_base_batch_size)
        if cfg.num_learning_rate_warmup_epochs > 0:
            warmup_steps = cfg.num_learning_rate_warmup_epochs * steps_per_epoch
            rate = tf.where(step < warmup_steps, rate * step / warmup_steps, rate)
    return tf.identity(rate, name='learning_rate')


class DecayingGradientDescent(tf.train.GradientDescentOptimizer):
    """Plain SGD on loss + weight_decay * l2_loss(decayed weights), the decay applied by the
    update itself.

    For a decayed weight v the step is v <- v (1 - lr wd) - lr g, where g is the gradient of
    the loss without its L2 term: exactly the SGD step on the loss with it. Perf: one kernel
    pass over v instead of three (the L2 term's gradient is a Mul and an AddN over every
    weight, then the update); AlexNet's and the trivial model's large layers gain most.

    `ApplyProximalGradientDescent` with l1 = 0 computes v <- (v - a g) / (1 + a l2); with
    a = lr / (1 - lr wd) and l2 = wd that is the step above. Weights whose dtype the kernel
    does not take (16-bit) get the decay added to their gradient instead.
    """

    def __init__(self, rate, weight_decay, is_decayed=tower.is_decayed):
        super().__init__(rate)
        self._weight_decay = weight_decay
        self._is_decayed = is_decayed

    def _prepare(self):
        super()._prepare()
        rate = self._learning_rate_tensor
        self._proximal_rate = rate / (1.0 - rate * self._weight_decay)

    def _resource_apply_dense(self, grad, handle):
        if not self._is_decayed(handle):
            return super()._resource_apply_dense(grad, handle)
        if handle.dtype.base_dtype not in (tf.float32, tf.float64):
            return super()._resource_apply_dense(
                grad + self._weight_decay * handle.read_value(), handle)
        dtype = grad.dtype.base_dtype
        return tf.raw_ops.ResourceApplyProximalGradientDescent(
            var=handle.handle, alpha=tf.cast(self._proximal_rate, dtype),
            l1=tf.constant(0.0, dtype), l2=tf.constant(self._weight_decay, dtype), delta=grad,
            use_locking=self._use_locking)

    def _resource_apply_sparse_duplicate_indices(self, grad, handle, indices,
                                                 indexed_slices=None):
        if not self._is_decayed(handle):
            return super()._resource_apply_sparse_duplicate_indices(grad, handle, indices,
                                                                    indexed_slices)
        # The decay touches every row: a dense update.
        dense = tf.convert_to_tensor(tf.IndexedSlices(grad, indices,
                                                      tf.shape(handle, out_type=indices.dtype)))
        return self._resource_apply_dense(dense, handle)


def decays_in_update(optimizer_config, loss_scale, synchronous, staged_reads,
                     momentum_on_senders=False):
    """Whether `make_optimizer` may apply the weight decay in the update
    (`DecayingGradientDescent`): plain SGD with a decay, in synchronous steps whose towers read
    the variables' current values, with no clipping, loss scale or senders' momentum
    (--momentum_correction) acting on the gradient the decay would otherwise be part of."""
    cfg = optimizer_config
    return (cfg.optimizer == 'sgd' and cfg.weight_decay > 0 and cfg.gradient_clip is None and
            loss_scale is None and synchronous and not staged_reads and not momentum_on_senders)


def make_optimizer(optimizer_config, rate, decay_in_update=False):
    """A new tf.train optimizer of the configured kind at learning rate `rate`; with
    `decay_in_update` (plain SGD only, see `decays_in_update`) one whose update applies the
    configured weight decay (`DecayingGradientDescent`)."""
    cfg = optimizer_config
    if decay_in_update:
        if cfg.optimizer != 'sgd':
            raise config_lib.ConfigError('weight decay in the update needs --optimizer=sgd')
        return DecayingGradientDescent(rate, cfg.weight_decay)
    if cfg.optimizer == 'sgd':
        return tf.train.GradientDescentOptimizer(rate)
    if cfg.optimizer == 'momentum':
        return tf.train.MomentumOptimizer(rate, cfg.momentum)
    if cfg.optimizer == 'rmsprop':
        return tf.train.RMSPropOptimizer(rate, decay=cfg.rmsprop_decay, momentum=cfg.momentum,
                                         epsilon=cfg.rmsprop_epsilon)
    if cfg.optimizer == 'adam':
        return tf.train.AdamOptimizer(rate, cfg.adam_beta1, cfg.adam_beta2, cfg.adam_epsilon)
    raise config_lib.ConfigError('unknown optimizer %r' % (cfg.optimizer,))

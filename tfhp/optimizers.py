"""Optimizers and learning-rate schedules (piecewise constant, exponential decay, linear warm-up,
linear scaling)."""
import tensorflow.compat.v1 as tf

from tfhp import config as config_lib


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


def make_optimizer(optimizer_config, rate):
    """A new tf.train optimizer of the configured kind at learning rate `rate`."""
    cfg = optimizer_config
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

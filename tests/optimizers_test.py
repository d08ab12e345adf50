"""Learning-rate schedules and optimizer kinds, evaluated at known steps."""
import pytest
import tensorflow.compat.v1 as tf

from tfhp import config as config_lib
from tfhp import optimizers


def _rates(cfg, steps, base=0.1, global_batch=100, epoch=1000):
    with tf.Graph().as_default():
        step = tf.placeholder(tf.int64, [])
        rate = optimizers.learning_rate(cfg, base, step, global_batch, epoch)
        with tf.Session() as sess:
            return [sess.run(rate, {step: s}) for s in steps]


def test_constant_rate():
    assert _rates(config_lib.OptimizerConfig(), [0, 50]) == pytest.approx([0.1, 0.1])


def test_piecewise_in_epochs():
    # 10 steps per epoch: 0.3 until step 20, 0.03 until step 40, then 0.003.
    cfg = config_lib.OptimizerConfig(piecewise_learning_rate_schedule='0.3;2;0.03;4;0.003')
    assert _rates(cfg, [0, 20, 21, 40, 41]) == pytest.approx([0.3, 0.3, 0.03, 0.03, 0.003])


def test_linear_warmup_then_base():
    cfg = config_lib.OptimizerConfig(num_learning_rate_warmup_epochs=1)
    assert _rates(cfg, [0, 5, 10, 30]) == pytest.approx([0.0, 0.05, 0.1, 0.1])


def test_linear_scaling_rule():
    cfg = config_lib.OptimizerConfig(learning_rate_base_batch_size=25)
    assert _rates(cfg, [0], global_batch=100) == pytest.approx([0.4])


@pytest.mark.parametrize('name, cls', [
    ('sgd', tf.train.GradientDescentOptimizer), ('momentum', tf.train.MomentumOptimizer),
    ('rmsprop', tf.train.RMSPropOptimizer), ('adam', tf.train.AdamOptimizer)])
def test_make_optimizer(name, cls):
    assert isinstance(optimizers.make_optimizer(config_lib.OptimizerConfig(optimizer=name), 0.1),
                      cls)


def test_exponential_staircase_decay_with_a_floor():
    # 10 steps per epoch; x0.5 every 2 epochs (20 steps), never below 0.02.
    cfg = config_lib.OptimizerConfig(num_epochs_per_decay=2, learning_rate_decay_factor=0.5,
                                     minimum_learning_rate=0.02)
    assert _rates(cfg, [0, 19, 20, 39, 40, 60, 200]) == pytest.approx(
        [0.1, 0.1, 0.05, 0.05, 0.025, 0.02, 0.02])


def test_decay_then_warm_up():
    cfg = config_lib.OptimizerConfig(num_epochs_per_decay=1, learning_rate_decay_factor=0.1,
                                     num_learning_rate_warmup_epochs=0.5)
    assert _rates(cfg, [0, 4, 5, 10]) == pytest.approx([0.0, 0.08, 0.1, 0.01])

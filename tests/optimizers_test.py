"""Learning-rate schedules and optimizer kinds, evaluated at known steps."""
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import build
from tfhp import config as config_lib
from tfhp.runner import optimizers


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


@pytest.mark.parametrize('changes, expected', [
    ({}, True),
    ({'optimizer': 'momentum'}, False),     # its kernels take no decay
    ({'weight_decay': 0.0}, False),
    ({'gradient_clip': 1.0}, False),        # clipping acts on the decayed gradient
    ({'loss_scale': 'auto'}, False),
    ({'synchronous': False}, False),        # an async gradient was taken at older weights
    ({'staged_reads': True}, False),        # so was a staged one
    ({'momentum_on_senders': True}, False),  # the decay's gradient rides the momentum
])
def test_weight_decay_moves_into_the_update_only_where_it_is_the_same_step(changes, expected):
    settings = dict(optimizer='sgd', weight_decay=4e-5, gradient_clip=None, loss_scale=None,
                    synchronous=True, staged_reads=False, momentum_on_senders=False)
    settings.update(changes)
    cfg = config_lib.OptimizerConfig(**{name: settings.pop(name) for name in (
        'optimizer', 'weight_decay', 'gradient_clip')})
    assert optimizers.decays_in_update(cfg, **settings) == expected


def test_the_benchmark_differentiates_no_l2_term_when_the_update_decays():
    def l2_gradients(**optimizer):
        graph = build.build(testing.small_config(model='lenet', image_size=28,
                                                     optimizer=optimizer)).graph
        return [op for op in graph.get_operations()
                if 'L2Loss' in op.name and '_grad' in op.name]
    assert not l2_gradients()
    assert l2_gradients(optimizer='momentum')
    with pytest.raises(config_lib.ConfigError, match='--optimizer=sgd'):
        optimizers.make_optimizer(config_lib.OptimizerConfig(optimizer='momentum'), 0.1, True)

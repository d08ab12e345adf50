"""Mixed precision: float32 master weights read in 16 bits, loss scaling, every manager.

The automatic loss scale is driven by a real float16 overflow: the gradient of the loss with
respect to float16 logits is loss_scale / (number of logits), which float16 cannot hold above
65504, so the scale falls until it fits and rises again after N finite steps.
"""
import re

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import step_test
from tests import testing
from tfhp.runner import benchmark
from tfhp.runner import build
from tfhp import config as config_lib
from tfhp.runner import loss_scale as loss_scale_lib
from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.models import layers


def _variables_by_name():
    return {v.op.name: v for v in tf.global_variables()}


@pytest.mark.parametrize('dtype, variable_dtype', [(tf.float16, tf.float32),
                                                   (tf.bfloat16, tf.float32),
                                                   (tf.float16, tf.float16)])
@pytest.mark.parametrize('fused', [True, False])
def test_layers_compute_in_16_bits_on_stored_weights(dtype, variable_dtype, fused):
    x = np.random.RandomState(0).normal(size=[2, 6, 6, 3]).astype(np.float32)
    with tf.Graph().as_default():
        builder = layers.LayerBuilder(dtype=dtype, variable_dtype=variable_dtype,
                                      fuse_batchnorm=fused)
        y = builder.conv(tf.cast(x, dtype), 4, 3, batch_norm=True)
        y = builder.lrn(y)
        logits = builder.dense(builder.flatten(y), 5, activation=None)
        assert y.dtype == dtype and logits.dtype == dtype
        stored = _variables_by_name()
        assert stored['conv0/weights'].dtype.base_dtype == variable_dtype
        assert stored['dense0/weights'].dtype.base_dtype == variable_dtype
        # Batch norm keeps float32 parameters and statistics whatever the compute dtype.
        for name in ('beta', 'gamma', 'moving_mean', 'moving_variance'):
            assert stored['conv0/batchnorm/' + name].dtype.base_dtype == tf.float32
        loss = tf.reduce_mean(tf.cast(logits, tf.float32))
        trainable = tf.trainable_variables()
        grads = tf.gradients(loss, trainable)
        assert [g.dtype for g in grads] == [v.dtype.base_dtype for v in trainable]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values = sess.run([logits] + grads)
    assert all(np.all(np.isfinite(np.asarray(v, np.float32))) for v in values)
    assert np.abs(np.asarray(values[1], np.float32)).sum() > 0


def _fp16_logits_model(images, labels):
    """logits = x @ w in float16 (w stored in float32); loss = mean of the logits."""
    del labels
    weights = tf.get_variable('fc/weights', initializer=tf.constant([[0.5], [0.25]]))
    logits = tf.matmul(tf.cast(images, tf.float16), tf.cast(weights, tf.float16))
    logits = tf.cast(logits, tf.float32)
    return tf.reduce_mean(logits), tf.concat([logits, -logits], 1)


REPLICATED_XRING = dict(variable_update='replicated', all_reduce_spec='xring')


@pytest.mark.parametrize('num_towers, replication_fields', [
    (1, {}), (2, {}), (2, REPLICATED_XRING), (2, dict(variable_update='independent'))])
def test_auto_loss_scale_halves_on_overflow_skips_the_step_and_doubles_after_n(
        num_towers, replication_fields):
    # Each tower's loss is the mean of 2 float16 logits: d loss / d logit = scale / 2, which
    # overflows float16 (max 65504) at scale 2^17 and above. The weights' gradient sums the
    # two rows of x times it: columns adding up to at most 1 keep it in range below 2^17.
    x = np.array([[0.5, 0.25], [0.5, 0.25]], np.float32)
    y = np.zeros([2], np.int32)
    topo = topology_lib.Topology.local('cpu', num_towers)
    with tf.Graph().as_default():
        manager = replication.make_variable_manager(
            config_lib.ReplicationConfig(**replication_fields), topo)
        with tf.device('/cpu:0'):
            scale = loss_scale_lib.LossScale(2.0 ** 18, auto=True, inc_every_n=3)
        ops = step.build_train_step(
            step_test.FixedPipeline(x, y), _fp16_logits_model, manager,
            scale.optimizer_fn(lambda: tf.train.GradientDescentOptimizer(0.1)), topo,
            loss_scale=scale)
        weights = manager.trainable_variables(num_towers - 1)[0]
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=num_towers)) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(ops.post_init_ops)
            history = []
            for _ in range(7):
                before = sess.run(weights)
                sess.run(ops.train_op)
                after, scale_value, count, global_step = sess.run(
                    [weights, scale.scale, scale.finite_steps, ops.global_step])
                history.append((not np.array_equal(before, after), scale_value, count))
    assert global_step == 7  # skipped steps count too
    assert history == [
        (False, 2.0 ** 17, 0),  # 2^18 / 2 overflows: skipped, halved
        (False, 2.0 ** 16, 0),  # 2^17 / 2 = 65536 overflows too
        (True, 2.0 ** 16, 1),   # 32768 fits: applied
        (True, 2.0 ** 16, 2),
        (True, 2.0 ** 17, 0),   # the 3rd finite step in a row doubles the scale
        (False, 2.0 ** 16, 0),  # which overflows again
        (True, 2.0 ** 16, 1)]


def test_a_fixed_loss_scale_leaves_the_update_unchanged():
    # float32: scaling by 1024 and dividing the gradients by it is exact (a power of two).
    x = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 2.0]], np.float32)
    y = np.array([1, 0], np.int32)
    results = []
    for scale in (None, 1024.0):
        topo = topology_lib.Topology.local('cpu', 1)
        with tf.Graph().as_default():
            manager = replication.make_variable_manager(config_lib.ReplicationConfig(), topo)
            ops = step.build_train_step(
                step_test.FixedPipeline(x, y), step_test._linear_model, manager,  # pylint: disable=protected-access
                lambda: tf.train.MomentumOptimizer(0.5, 0.9), topo, weight_decay=0.01,
                loss_scale=loss_scale_lib.LossScale(scale) if scale else None)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(3):
                    sess.run(ops.train_op)
                results.append(sess.run(tf.trainable_variables()[0]))
    np.testing.assert_array_equal(results[0], results[1])


# Every manager and all-reduce on 2 virtual CPU devices, in each 16-bit mode: lenet on its
# synthetic batch, 6 steps; its loss must fall and stay finite.
MODES = {
    'fp16_auto_scale': dict(use_fp16=True, fp16_enable_auto_loss_scale=True),
    'fp16_vars': dict(use_fp16=True, fp16_vars=True),
    'bf16': dict(compute_dtype='bfloat16'),
}
UPDATES = {
    'parameter_server': {},
    'replicated_xring': REPLICATED_XRING,
    'replicated_pscpu_repacked': dict(variable_update='replicated', all_reduce_spec='pscpu',
                                      gradient_repacking=2),
    'independent': dict(variable_update='independent'),
}


@pytest.mark.parametrize('update', sorted(UPDATES))
@pytest.mark.parametrize('mode', sorted(MODES))
def test_every_manager_trains_in_16_bits_on_two_devices(mode, update):
    cfg = testing.small_config(
        model='lenet', image_size=8, batch_size=8, num_batches=6,
        device={'num_devices': 2}, replication=UPDATES[update], precision=MODES[mode],
        optimizer={'learning_rate': 0.05, 'optimizer': 'momentum'})
    cfg = testing.replace(cfg, 'run', num_warmup_batches=0)
    lines = []
    last = benchmark.run(cfg, log=lines.append)
    # The first step's line (display_every=1) carries the loss of the initial weights.
    first_loss = float(re.search(r'^step 1\t.*\tloss: ([0-9.]+)$', '\n'.join(lines), re.M)[1])
    assert last['compute_dtype'] == ('bfloat16' if mode == 'bf16' else 'float16')
    assert np.isfinite(last['final_loss'])
    assert last['final_loss'] < first_loss
    assert last['global_step'] == 6


def _transfer_dtype(**sections):
    cfg = testing.small_config(**sections)
    return config_lib.all_reduce_replication(cfg).gradient_transfer_dtype


def test_compact_gradient_transfer_is_the_one_cast_of_gradient_transfer_dtype():
    fp16 = {'use_fp16': True}
    assert _transfer_dtype(replication=REPLICATED_XRING, precision=fp16) == 'float16'
    assert _transfer_dtype(replication=REPLICATED_XRING,
                           precision=dict(fp16, compact_gradient_transfer=False)) == 'float32'
    assert _transfer_dtype(replication=dict(REPLICATED_XRING,
                                            gradient_transfer_dtype='bfloat16'),
                           precision=fp16) == 'bfloat16'
    # float32 compute and the managers without an all-reduce transfer in float32.
    assert _transfer_dtype(replication=REPLICATED_XRING) == 'float32'
    assert _transfer_dtype(precision=fp16) == 'float32'
    assert _transfer_dtype(replication=REPLICATED_XRING,
                           precision={'compute_dtype': 'bfloat16'}) == 'float32'


def test_compact_transfer_all_reduces_float16_gradients():
    cfg = testing.small_config(model='lenet', image_size=8, device={'num_devices': 2},
                               replication=REPLICATED_XRING, precision={'use_fp16': True})
    graph = build.build(cfg).graph
    ring_adds = [op for op in graph.get_operations()
                 if op.name.startswith('aggregate/') and op.type == 'AddV2']
    assert ring_adds and all(op.outputs[0].dtype == tf.float16 for op in ring_adds)


@pytest.mark.parametrize('fields, flag', [
    (dict(use_fp16=True, compute_dtype='bfloat16'), '--use_fp16'),
    (dict(fp16_loss_scale=128.0), '--fp16_loss_scale'),
    (dict(compute_dtype='bfloat16', fp16_enable_auto_loss_scale=True),
     '--fp16_enable_auto_loss_scale'),
    (dict(fp16_vars=True), '--fp16_vars'),
    (dict(use_fp16=True, fp16_loss_scale=0.0), '--fp16_loss_scale'),
    (dict(use_fp16=True, fp16_inc_loss_scale_every_n=0), '--fp16_inc_loss_scale_every_n'),
    (dict(compute_dtype='float64'), '--compute_dtype'),
])
def test_precision_settings_that_cannot_work_name_the_flag(fields, flag):
    with pytest.raises(config_lib.ConfigError, match=flag):
        config_lib.PrecisionConfig(**fields)


def test_loss_scale_defaults():
    assert config_lib.PrecisionConfig(use_fp16=True).loss_scale == 128.0
    assert config_lib.PrecisionConfig(use_fp16=True, fp16_loss_scale=1.0).loss_scale is None
    assert config_lib.PrecisionConfig(compute_dtype='bfloat16').loss_scale is None
    assert config_lib.PrecisionConfig(compute_dtype='float16').dtype == 'float16'

"""Every synchronous manager on N towers with batch b equals one tower with batch N*b.

Also: replicated copies stay bitwise identical; independent towers train alone; checkpoints of
per-tower copies carry the parameter server's names.
"""
import functools
import re

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp import config as config_lib
from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.pipelines import base

BATCH_PER_TOWER = 3
NUM_STEPS = 3
RNG = np.random.RandomState(0)
IMAGES = RNG.normal(size=[4 * BATCH_PER_TOWER, 7]).astype(np.float32)
LABELS = RNG.randint(0, 3, size=[4 * BATCH_PER_TOWER]).astype(np.int32)
# Odd layer sizes; fixed initial values, so every run starts from the same weights.
WEIGHTS = {'fc0/weights': RNG.normal(scale=0.5, size=[7, 5]).astype(np.float32),
           'fc0/biases': RNG.normal(scale=0.1, size=[5]).astype(np.float32),
           'fc1/weights': RNG.normal(scale=0.5, size=[5, 3]).astype(np.float32),
           'fc1/biases': np.zeros([3], np.float32)}


class SlicedPipeline(base.Pipeline):
    """Tower t of n gets rows [t*b, (t+1)*b) of the first n*b rows of a fixed batch."""

    def __init__(self, images, labels, batch_per_tower):
        self._images, self._labels, self._batch = images, labels, batch_per_tower

    def tower_batches(self, topology):
        batches = []
        for t, device in enumerate(topology.tower_devices):
            rows = slice(t * self._batch, (t + 1) * self._batch)
            with tf.device(device):
                batches.append((tf.constant(self._images[rows]), tf.constant(self._labels[rows])))
        return base.InputBatches(batches=batches, put_ops=[], warmup_ops=[])


def mlp(images, labels, random_init=False):
    """A two-layer perceptron without batch norm: (loss, logits).

    Weights start at WEIGHTS, or (random_init) at random values that differ per tower.
    """
    x = images
    for layer, activation in (('fc0', tf.nn.relu), ('fc1', tf.identity)):
        with tf.variable_scope(layer):
            w, b = [tf.get_variable(name, initializer=(
                tf.random.normal(WEIGHTS[layer + '/' + name].shape) if random_init else
                WEIGHTS[layer + '/' + name])) for name in ('weights', 'biases')]
            x = activation(tf.matmul(x, w) + b)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels,
                                                                         logits=x))
    return loss, x


def momentum():
    return tf.train.MomentumOptimizer(0.1, 0.9)


def train(replication_config, num_towers, batch_per_tower, topology=None,
          num_steps=NUM_STEPS, save_path=None, model_fn=mlp):
    """Trains mlp; returns ({canonical name: value}, {variable name: value}, manager)."""
    topology = topology or topology_lib.Topology.local('cpu', num_towers)
    with tf.Graph().as_default():
        manager = replication.make_variable_manager(replication_config, topology)
        ops = step.build_train_step(SlicedPipeline(IMAGES, LABELS, batch_per_tower), model_fn,
                                    manager, momentum, topology, weight_decay=0.01)
        savable = manager.savable_variables() or {v.op.name: v for v in tf.global_variables()}
        every = {v.op.name: v for v in tf.global_variables()}
        proto = session_lib.config_proto(num_cpu_devices=max(2, num_towers))
        with tf.Session(config=proto) as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(ops.post_init_ops)
            for _ in range(num_steps):
                sess.run(ops.train_op)
            if save_path:
                tf.train.Saver(savable).save(sess, save_path)
            return sess.run(savable), sess.run(every), manager


@functools.lru_cache(maxsize=None)  # 16 tests compare with 2 references
def reference(num_towers):
    """One tower with the whole batch of num_towers towers."""
    return train(config_lib.ReplicationConfig(), 1, num_towers * BATCH_PER_TOWER)[0]


REPLICATED = dict(variable_update='replicated')
CONFIGS = {
    'parameter_server': {},
    'replicated': REPLICATED,
    'replicated_xring': dict(REPLICATED, all_reduce_spec='xring'),
    'replicated_xring#2_repacked': dict(REPLICATED, all_reduce_spec='xring#2',
                                        gradient_repacking=2),
    'replicated_psgpu#2': dict(REPLICATED, all_reduce_spec='psgpu#2'),
    'replicated_ranges_small_grads': dict(REPLICATED, all_reduce_spec='pscpu#2:16:xring',
                                          agg_small_grads_max_bytes=64),
    'replicated_collective': dict(REPLICATED, all_reduce_spec='collective'),
    'replicated_hierarchical_copy': dict(REPLICATED, hierarchical_copy=True),
}


@pytest.mark.parametrize('num_towers', [2, 4])
@pytest.mark.parametrize('name', sorted(CONFIGS))
def test_n_towers_match_one_tower_with_n_times_the_batch(name, num_towers):
    want = reference(num_towers)
    got = train(config_lib.ReplicationConfig(**CONFIGS[name]), num_towers, BATCH_PER_TOWER)[0]
    assert set(got) == set(want)  # same checkpoint names, momentum slots included
    assert len(want) == 9  # 4 variables, 4 slots, global_step
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=key)
    assert got['global_step'] == NUM_STEPS


def test_parameter_server_spread_over_tower_devices_matches():
    devices = ('/cpu:0', '/cpu:1', '/cpu:2')
    topology = topology_lib.Topology(tower_devices=devices, variable_devices=devices)
    want = reference(3)
    got = train(config_lib.ReplicationConfig(), 3, BATCH_PER_TOWER, topology=topology)[0]
    for key in want:
        np.testing.assert_allclose(got[key], want[key], rtol=1e-5, atol=1e-6, err_msg=key)


@pytest.mark.parametrize('spec', ['', 'xring', 'collective', 'pscpu:16:psgpu#3'])
def test_replicated_copies_are_bitwise_identical(spec):
    cfg = config_lib.ReplicationConfig(variable_update='replicated', all_reduce_spec=spec)
    # Random initial values, different on every tower: post_init_ops must make them equal.
    _, every, _ = train(cfg, 3, BATCH_PER_TOWER, num_steps=5,
                        model_fn=lambda x, y: mlp(x, y, random_init=True))
    copies = [{k[3:]: v for k, v in every.items() if k.startswith('v%d/' % t)} for t in range(3)]
    assert len(copies[0]) == 8  # 4 variables + 4 momentum slots
    for t in (1, 2):
        assert set(copies[t]) == set(copies[0])
        for key, value in copies[0].items():
            np.testing.assert_array_equal(copies[t][key], value, err_msg='v%d/%s' % (t, key))
    assert copies[0]['fc0/weights/Momentum'].any()  # they trained


def test_independent_towers_each_train_on_their_own_batch():
    cfg = config_lib.ReplicationConfig(variable_update='independent')
    _, every, _ = train(cfg, 2, BATCH_PER_TOWER)
    for t in range(2):
        rows = slice(t * BATCH_PER_TOWER, (t + 1) * BATCH_PER_TOWER)
        alone = SlicedPipeline(IMAGES[rows], LABELS[rows], BATCH_PER_TOWER)
        with tf.Graph().as_default():
            topology = topology_lib.Topology.local('cpu', 1)
            manager = replication.make_variable_manager(config_lib.ReplicationConfig(),
                                                        topology)
            ops = step.build_train_step(alone, mlp, manager, momentum, topology,
                                        weight_decay=0.01)
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                for _ in range(NUM_STEPS):
                    sess.run(ops.train_op)
                want = sess.run({v.op.name: v for v in tf.trainable_variables()})
        for key, value in want.items():
            np.testing.assert_allclose(every['v%d/%s' % (t, key)], value, rtol=1e-5,
                                       atol=1e-6)


def test_parameter_server_checkpoint_restores_into_every_replicated_copy(tmp_path):
    """Canonical names match; a restore fills tower 0, and post_init_ops copies it over."""
    path = str(tmp_path / 'model.ckpt')
    saved, _, _ = train(config_lib.ReplicationConfig(), 1, BATCH_PER_TOWER, save_path=path)
    topology = topology_lib.Topology.local('cpu', 3)
    with tf.Graph().as_default():
        manager = replication.make_variable_manager(
            config_lib.ReplicationConfig(variable_update='replicated'), topology)
        ops = step.build_train_step(SlicedPipeline(IMAGES, LABELS, BATCH_PER_TOWER), mlp,
                                    manager, momentum, topology)
        saver = tf.train.Saver(manager.savable_variables())
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=3)) as sess:
            sess.run(tf.global_variables_initializer())
            saver.restore(sess, path)
            sess.run(ops.post_init_ops)
            every = sess.run({v.op.name: v for v in tf.global_variables()})
    assert every['global_step'] == NUM_STEPS
    for key, value in saved.items():
        if key != 'global_step':
            for t in range(3):
                np.testing.assert_array_equal(every['v%d/%s' % (t, key)], value, err_msg=key)


def test_aggregation_and_updates_sit_under_their_stage_scopes():
    topology = topology_lib.Topology.local('cpu', 2)
    with tf.Graph().as_default() as graph:
        manager = replication.make_variable_manager(
            config_lib.ReplicationConfig(variable_update='replicated', all_reduce_spec='xring',
                                         gradient_repacking=2), topology)
        step.build_train_step(SlicedPipeline(IMAGES, LABELS, BATCH_PER_TOWER), mlp, manager,
                              momentum, topology)
        ops = graph.get_operations()
    ring_adds = [op.name for op in ops if re.search(r'/ring(_\d+)?/', op.name) and
                 op.type == 'AddV2']
    assert len(ring_adds) == 2 * 2  # 2 packs, 2 devices x (2 - 1) reduce-scatter steps
    assert all(name.startswith('aggregate/') for name in ring_adds)
    applies = [op.name for op in ops if op.type == 'ResourceApplyMomentum']
    assert len(applies) == 2 * 4 and all(name.startswith('apply/') for name in applies)

"""Stepping through a two-stage software pipeline: each warm-up prefix, then a full step."""
import os

import tensorflow.compat.v1 as tf
from tensorflow.python.ops import data_flow_ops  # pylint: disable=g-direct-tensorflow-import

from tfhp import config as config_lib
from tfhp import replication
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.runner import tower
from tfhp.models import registry
from tfhp.ops import scopes
from tfhp.pipelines import base
from tfhp.pipelines import software_pipeline
from tfhp.profiling import analysis
from tfhp.profiling import events
from tfhp.profiling import stepping


class TwoStagePipeline(base.Pipeline):
    """input -> host staging area -> device staging area -> tower 0 (one tower)."""

    def __init__(self):
        self.areas = []

    def tower_batches(self, topology):
        with tf.name_scope(scopes.INPUT):
            images = tf.random.uniform([4, 16, 16, 3], seed=1)
            labels = tf.random.uniform([4], 0, 10, tf.int32, seed=2)
        tensors = [images, labels]
        puts = []
        for device in (topology.input_device, topology.tower_devices[0]):
            with tf.device(device), tf.name_scope(scopes.STAGING):
                area = data_flow_ops.StagingArea([t.dtype for t in tensors],
                                                 [t.shape for t in tensors])
                puts.append(area.put(tensors))
                tensors = area.get()
                self.areas.append(area)
        return base.InputBatches(batches=[tuple(tensors)], put_ops=puts, warmup_ops=puts)


class ChainedPipeline(base.Pipeline):
    """A real 2-stage software pipeline: input -> S1 -> preprocess -> S2 -> tower 0."""

    def __init__(self):
        self.chain = None

    def tower_batches(self, topology):
        host = topology.input_device

        def read():
            with tf.device(host), tf.name_scope(scopes.INPUT):
                images = tf.random.uniform([4, 16, 16, 3], seed=1)
                labels = tf.random.uniform([4], 0, 10, tf.int32, seed=2)
            return [software_pipeline.Group(host, (images, labels))]

        def preprocess(nests):
            images, labels = nests[0]
            with tf.device(host), tf.name_scope(scopes.PREPROCESS):
                images = images * 2.0 - 1.0
            return [software_pipeline.Group(topology.tower_devices[0], (images, labels))]

        self.chain = software_pipeline.chain([read, preprocess])
        return base.InputBatches(batches=[tuple(b) for b in self.chain.outputs],
                                 put_ops=self.chain.put_ops, warmup_ops=self.chain.warmup_ops)


def test_step_through_records_the_staging_areas_filling():
    topology = topology_lib.Topology.local('cpu', 1)
    pipeline = ChainedPipeline()
    with tf.Graph().as_default():
        manager = replication.make_variable_manager(config_lib.ReplicationConfig(), topology)
        ops = step.build_train_step(pipeline, tower.make_model_fn(registry.get('trivial'), 10),
                                    manager, lambda: tf.train.GradientDescentOptimizer(0.1),
                                    topology)
        sizes = software_pipeline.sizes_by_name(pipeline.chain)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            runs = stepping.step_through(sess, ops.warmup_ops, ops.train_op, sizes=sizes)
            sess.run(ops.train_op)
            after_two_steps = sess.run(list(sizes.values()))
    s1, s2 = sizes  # the areas' names, in stage order
    assert s1.endswith('/pipeline_s1_0') and s2.endswith('/pipeline_s2_0')
    # warmup_1 fills S1; warmup_2 moves that set into S2 and refills S1; a step takes one set
    # from each and puts one into each.
    assert [(r.label, r.sizes) for r in runs] == [('warmup_1', {s1: 1, s2: 0}),
                                                  ('warmup_2', {s1: 1, s2: 1}),
                                                  ('step', {s1: 1, s2: 1})]
    assert after_two_steps == [1, 1]


def test_step_through_runs_each_prefix_then_a_full_step(tmp_path):
    topology = topology_lib.Topology.local('cpu', 1)
    pipeline = TwoStagePipeline()
    with tf.Graph().as_default():
        manager = replication.make_variable_manager(config_lib.ReplicationConfig(), topology)
        ops = step.build_train_step(pipeline, tower.make_model_fn(registry.get('trivial'), 10),
                                    manager, lambda: tf.train.GradientDescentOptimizer(0.1),
                                    topology)
        sizes = [area.size() for area in pipeline.areas]
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            runs = stepping.step_through(sess, ops.warmup_ops, ops.train_op, str(tmp_path))
            # The pipeline is full, as after session.warm_up and one step.
            assert sess.run(sizes) == [1, 1]
            assert sess.run(ops.global_step) == 1

    assert [r.label for r in runs] == ['warmup_1', 'warmup_2', 'step']
    assert [r.sizes for r in runs] == [{}, {}, {}]  # no sizes asked for
    counts = []
    for run in runs:
        types = [op.type for op in events.parse(run.run_metadata).ops]
        counts.append((types.count('Stage'), types.count('Unstage'),
                       types.count('ResourceApplyGradientDescent')))
    # warmup_1 fills the host area; warmup_2 moves that batch on and refills it; the step
    # runs both puts, both gets and the update.
    assert counts == [(1, 0, 0), (2, 1, 0), (2, 2, 6)]
    full = analysis.analyze(runs[-1].run_metadata)
    stages = full.devices[0].stages
    assert stages['staging'] > 0 and stages['input'] > 0 and stages['forward'] > 0
    assert sorted(os.listdir(tmp_path)) == sorted(
        name + suffix for name in ('warmup_1', 'warmup_2', 'step')
        for suffix in ('.json', '.json.runmeta.pb'))

"""Software pipelining: warm-up fills each buffer once, steps are shifted by the depth, drain
empties, a pipelined run overlaps its stages, and pipelined training equals unpipelined."""
import time

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.config import ReplicationConfig
from tfhp.pipelines import base
from tfhp.pipelines import software_pipeline

Group = software_pipeline.Group


def _two_stage_chain(staged, consumer_device='/cpu:1'):
    """A: a counter 1, 2, 3... on cpu:0 -> S1 -> B: times 10, moved to consumer_device -> S2."""
    counter = tf.Variable(0, trainable=False, name='counter')

    def read():
        return [Group('/cpu:0', counter.assign_add(1))]

    def preprocess(nests):
        with tf.device('/cpu:0'):
            return [Group(consumer_device, nests[0] * 10)]

    return counter, software_pipeline.chain([read, preprocess], staged=staged)


def test_warm_up_leaves_one_set_per_buffer_and_steps_lag_by_the_depth():
    with tf.Graph().as_default():
        counter, chain = _two_stage_chain(staged=True)
        consumed = chain.outputs[0]
        assert len(chain.warmup_ops) == 2
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run(counter.initializer)
            sess.run(chain.warmup_ops[:1])
            assert sess.run(chain.sizes) == [[1], [0]]
            sess.run(chain.warmup_ops[:2])
            assert sess.run(chain.sizes) == [[1], [1]]
            seen = [sess.run([consumed, chain.put_ops])[0] for _ in range(4)]
            # Step k computes the source's k-th value while the source is at k + 2.
            assert seen == [10, 20, 30, 40]
            assert sess.run(counter) == 6
            assert sess.run(chain.sizes) == [[1], [1]]
            drained = [sess.run([consumed, ops])[0] for ops in chain.drain_ops]
            assert drained == [50, 60]
            assert sess.run(chain.sizes) == [[0], [0]]
            assert sess.run(counter) == 6


def test_a_grouped_chain_runs_each_stage_once_per_group_in_the_same_order():
    with tf.Graph().as_default():
        counter = tf.Variable(0, trainable=False, name='counter')

        def read():  # one run reads a group: 10k, 10k + 1, 10k + 2
            return [Group('/cpu:0', counter.assign_add(1) * 10 + tf.range(3))]

        def preprocess(nests):
            with tf.device('/cpu:0'):
                return [Group('/cpu:1', [nests[0][s] for s in range(3)])]

        chain = software_pipeline.chain([read, preprocess], group_size=3)
        assert chain.drain_ops == []
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run([counter.initializer, tf.local_variables_initializer()])
            session_lib.warm_up(sess, chain.warmup_ops)
            assert sess.run(chain.sizes) == [[0], [3]]
            seen = [sess.run([chain.outputs[0], chain.put_ops])[0] for _ in range(7)]
            assert seen == [10, 11, 12, 20, 21, 22, 30]
            # The source ran once per group of 3 steps (runs 0, 3, 6 of 9), and step 7's
            # group is in the last buffer.
            assert sess.run(counter) == 3
            assert sess.run(chain.sizes) == [[0], [2]]


def test_doubled_warm_up_fails_naming_the_buffer():
    with tf.Graph().as_default():
        counter, chain = _two_stage_chain(staged=True)
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run(counter.initializer)
            session_lib.warm_up(sess, chain.warmup_ops)
            sess.run(chain.warmup_ops[:1])
            with pytest.raises(tf.errors.InvalidArgumentError, match='pipeline_s1_0.* holds 2'):
                sess.run(chain.warmup_ops[:1])


def test_unstaged_chain_runs_every_stage_on_the_same_data():
    with tf.Graph().as_default():
        counter, chain = _two_stage_chain(staged=False)
        assert chain.put_ops == [] and chain.warmup_ops == []
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run(counter.initializer)
            assert [sess.run(chain.outputs[0]) for _ in range(3)] == [10, 20, 30]


class _CountingPipeline(base.Pipeline):
    """Batch k holds x = f(k) and labels from k: deterministic data with a known order."""

    def __init__(self, staged):
        self.staged = staged
        self.counter = None

    def tower_batches(self, topology):
        self.counter = tf.Variable(0, trainable=False, name='counter')

        def read():
            return [Group(topology.input_device, self.counter.assign_add(1))]

        def preprocess(nests):
            k = tf.cast(nests[0], tf.float32)
            images = tf.stack([tf.sin(k * [1.0, 2.0, 3.0]), tf.cos(k * [1.0, 0.5, 0.25])])
            labels = tf.stack([nests[0] % 2, (nests[0] + 1) % 2])
            return [Group(topology.tower_devices[0], (images, labels))]

        chain = software_pipeline.chain([read, preprocess], staged=self.staged)
        return base.InputBatches(batches=chain.outputs, put_ops=chain.put_ops,
                                 warmup_ops=chain.warmup_ops)


def _linear_model(images, labels):
    weights = tf.get_variable('w', [3, 2], initializer=tf.constant_initializer(0.1))
    logits = tf.matmul(images, weights)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits)), logits


def _train(staged, num_steps=5):
    topo = topology_lib.Topology.local('cpu', 1)
    with tf.Graph().as_default():
        pipe = _CountingPipeline(staged)
        manager = replication.make_variable_manager(ReplicationConfig(), topo)
        ops = step.build_train_step(pipe, _linear_model, manager,
                                    lambda: tf.train.GradientDescentOptimizer(0.5), topo)
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            session_lib.warm_up(sess, ops.warmup_ops)
            losses = [sess.run([ops.loss, ops.train_op])[0] for _ in range(num_steps)]
            return losses, sess.run(tf.trainable_variables()[0]), sess.run(pipe.counter)


def test_pipelined_training_equals_unpipelined_training():
    staged_losses, staged_weights, staged_reads = _train(staged=True)
    plain_losses, plain_weights, plain_reads = _train(staged=False)
    np.testing.assert_allclose(staged_losses, plain_losses, rtol=1e-6)
    np.testing.assert_allclose(staged_weights, plain_weights, atol=1e-6)
    assert len(set(np.round(plain_losses, 6))) == 5  # the data did change every step
    # The pipelined source ran ahead by the pipeline depth.
    assert (staged_reads, plain_reads) == (7, 5)


def _sleeping(seconds, x):
    """x after `seconds` of sleep: a stage that takes time but no CPU."""
    def sleep(value):
        time.sleep(seconds)
        return value
    y = tf.py_function(sleep, [x], x.dtype)
    y.set_shape(x.shape)
    return y


def _step_seconds(staged, stage_seconds=0.1):
    """Fastest of 3 steps of read (sleep) -> S1 -> compute (sleep), staged or not."""
    with tf.Graph().as_default():
        counter = tf.Variable(0, trainable=False, name='counter')
        chain = software_pipeline.chain(
            [lambda: [Group('/cpu:0', _sleeping(stage_seconds, counter.assign_add(1)))]],
            staged=staged)
        consumer = _sleeping(stage_seconds, chain.outputs[0] * 2)
        config = session_lib.config_proto(num_inter_threads=2)
        with tf.Session(config=config) as sess:
            sess.run(counter.initializer)
            session_lib.warm_up(sess, chain.warmup_ops)
            durations = []
            for _ in range(3):
                start = time.perf_counter()
                sess.run([consumer, chain.put_ops])
                durations.append(time.perf_counter() - start)
    return min(durations)


def test_one_pipelined_run_overlaps_the_stages():
    # Two 100 ms stages: in sequence a step takes 200 ms; pipelined, both run at once.
    assert _step_seconds(staged=False) >= 0.2
    assert _step_seconds(staged=True) < 0.15

"""The RecordInput pipeline on a tiny generated data set: shapes, labels, epochs, staging,
pipelined-vs-unpipelined training, corrupt records."""
import collections

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.pipelines import shapes
from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.config import ReplicationConfig
from tfhp.ops import record_input
from tfhp.pipelines import example_format
from tfhp.pipelines import input_only
from tfhp.pipelines import preprocessing
from tfhp.pipelines import records



def _pipeline(data_dir, subset='train', **kwargs):
    args = dict(batch_size=4, image_size=12, num_classes=shapes.NUM_CLASSES, parallelism=2,
                buffer_size=8, seed=3)
    args.update(kwargs)
    return records.RecordsPipeline(example_format.shard_pattern(data_dir, subset), **args)


def test_staged_batches_are_decoded_on_each_tower_after_warm_up(data_dir):
    topo = topology_lib.Topology.local('cpu', 2)
    with tf.Graph().as_default():
        chain = _pipeline(data_dir).chain(topo)
        assert len(chain.warmup_ops) == 2 and len(chain.put_ops) == 2
        assert [images.device for images, _ in chain.outputs] == ['/device:CPU:0',
                                                                 '/device:CPU:1']
        assert not tf.get_collection(tf.GraphKeys.LOCAL_VARIABLES)  # nothing to initialise
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            sess.run(chain.warmup_ops[:1])
            assert sess.run(chain.sizes) == [[1], [0, 0]]
            sess.run(chain.warmup_ops[:2])
            # One set in S1 (host records) and one in each tower's S2.
            assert sess.run(chain.sizes) == [[1], [1, 1]]
            labels = []
            for _ in range(3):  # one epoch: 24 images in batches of 2 x 4
                batches, _ = sess.run([chain.outputs, chain.put_ops])
                for images, tower_labels in batches:
                    assert images.shape == (4, 12, 12, 3) and images.dtype == np.float32
                    assert -1.0 <= images.min() < images.max() <= 1.0
                    labels.extend(tower_labels)
    assert collections.Counter(labels) == {k: shapes.PER_CLASS for k in range(4)}


def test_eval_batches_in_nchw_float16(data_dir):
    topo = topology_lib.Topology.local('cpu', 1)
    with tf.Graph().as_default():
        pipe = _pipeline(data_dir, 'validation', train=False, data_format='NCHW',
                         dtype=tf.float16, staged=False)
        inputs = pipe.tower_batches(topo)
        assert inputs.warmup_ops == [] and inputs.put_ops == []
        with tf.Session() as sess:
            images, labels = sess.run(inputs.batches[0])
    assert images.shape == (4, 3, 12, 12) and images.dtype == np.float16
    assert set(labels) <= set(range(4))


def _flat_linear_model(images, labels):
    features = tf.reshape(images, [int(images.shape[0]), -1])
    weights = tf.get_variable('w', [int(features.shape[1]), shapes.NUM_CLASSES],
                              initializer=tf.zeros_initializer())
    logits = tf.matmul(features, weights)
    return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits)), logits


def _train(data_dir, staged, num_steps=4, group_size=1, skip_corrupt=False):
    topo = topology_lib.Topology.local('cpu', 1)
    with tf.Graph().as_default():
        # One reader thread, a buffer holding a whole epoch and no random augmentation: the
        # same records in the same order (a smaller buffer's order depends on timing).
        pipe = _pipeline(data_dir, parallelism=1, buffer_size=100, crop_flip=False,
                         staged=staged, group_size=group_size, skip_corrupt=skip_corrupt)
        manager = replication.make_variable_manager(ReplicationConfig(), topo)
        ops = step.build_train_step(pipe, _flat_linear_model, manager,
                                    lambda: tf.train.GradientDescentOptimizer(0.1), topo)
        reads = [op.get_attr('batch_size') for op in tf.get_default_graph().get_operations()
                 if op.type == 'RecordInput']
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            session_lib.warm_up(sess, ops.warmup_ops)
            losses = [sess.run([ops.loss, ops.train_op])[0] for _ in range(num_steps)]
            return losses, sess.run(tf.trainable_variables()[0]), reads


def test_pipelined_training_equals_unpipelined_training(data_dir):
    staged_losses, staged_weights, _ = _train(data_dir, staged=True)
    plain_losses, plain_weights, _ = _train(data_dir, staged=False)
    np.testing.assert_allclose(staged_losses, plain_losses, rtol=1e-5)
    np.testing.assert_allclose(staged_weights, plain_weights, atol=1e-5)
    assert staged_losses[0] == pytest.approx(np.log(shapes.NUM_CLASSES), rel=1e-6)


@pytest.mark.parametrize('skip_corrupt', [False, True])
def test_grouped_batches_train_as_one_batch_at_a_time(data_dir, skip_corrupt):
    # --batch_group_size=3: one read of 3 batches' records every 3 steps, the same steps.
    grouped_losses, grouped_weights, grouped_reads = _train(
        data_dir, staged=True, num_steps=6, group_size=3, skip_corrupt=skip_corrupt)
    single_losses, single_weights, single_reads = _train(data_dir, staged=True, num_steps=6)
    assert (grouped_reads, single_reads) == ([12], [4])
    np.testing.assert_allclose(grouped_losses, single_losses, rtol=1e-5)
    np.testing.assert_allclose(grouped_weights, single_weights, atol=1e-5)
    assert len(set(np.round(single_losses, 5))) == 6  # the data did change every step


def test_corrupt_records_fail_the_step_unless_skipped_and_counted(tmp_path):
    pattern = shapes.make_corrupt(str(tmp_path))
    topo = topology_lib.Topology.local('cpu', 1)
    with tf.Graph().as_default():
        inputs = records.RecordsPipeline(pattern, 11, 12, 4, train=False, staged=False,
                                         parallelism=1, buffer_size=11).tower_batches(topo)
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(inputs.batches)
    with tf.Graph().as_default():
        inputs = records.RecordsPipeline(pattern, 11, 12, 4, train=False, staged=False,
                                         skip_corrupt=True, parallelism=1,
                                         buffer_size=11).tower_batches(topo)
        skipped = preprocessing.skipped_records()
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            (images, labels), = sess.run(inputs.batches)  # one batch = one epoch of 11 records
            assert sess.run(skipped) == 3
    assert images.shape == (11, 12, 12, 3)
    # Every good image is there; the 3 corrupt slots hold copies of good ones.
    counts = collections.Counter(labels)
    assert sum(counts.values()) == 11 and set(counts) == set(range(4))
    assert min(counts.values()) >= 2


def test_unusable_files_are_refused_when_the_pipeline_is_made(tmp_path):
    with pytest.raises(record_input.InputFilesError, match='no file matches'):
        _pipeline(str(tmp_path))


def test_input_only_step_delivers_batches_to_each_tower(data_dir):
    topo = topology_lib.Topology.local('cpu', 2)
    with tf.Graph().as_default():
        ops = input_only.build_step(_pipeline(data_dir), topo)
        assert ops.images_per_step == 8
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            session_lib.warm_up(sess, ops.warmup_ops)
            for _ in range(3):
                sess.run(ops.train_op)


def test_a_batch_of_only_corrupt_records_fails_when_skipping(tmp_path):
    with tf.io.TFRecordWriter(str(tmp_path / 'train-00000-of-00001')) as writer:
        for i in range(3):
            writer.write(b'not an Example %d' % i)
    with tf.Graph().as_default():
        inputs = records.RecordsPipeline(str(tmp_path / 'train-*'), 3, 12, 4, staged=False,
                                         skip_corrupt=True, parallelism=1).tower_batches(
                                             topology_lib.Topology.local('cpu', 1))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match='every record of a batch was corrupt'):
                sess.run(inputs.batches)


@pytest.mark.parametrize('cut', ['data', 'header'])
def test_a_cut_short_file_is_refused_when_skipping(tmp_path, cut):
    # RecordInput cannot skip the rest of a cut-short file (tests/ops/record_input_test.py),
    # so a pipeline promising to skip corrupt records refuses it before building anything.
    pattern = shapes.make_cut_short(str(tmp_path), cut)
    with pytest.raises(record_input.InputFilesError,
                       match=r'train-00000-of-00001 is cut short: its 4 complete record\(s\) '
                             r'end at byte \d+ of \d+; RecordInput cannot skip the rest'):
        records.RecordsPipeline(pattern, 4, 12, 4, skip_corrupt=True)
    records.RecordsPipeline(pattern, 4, 12, 4)  # not walked when not skipping

"""The tf.data pipeline on a tiny generated data set: whole epochs, shapes, device prefetch,
per-tower staging, corrupt records."""
import collections

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.pipelines import shapes
from tfhp import session as session_lib
from tfhp import topology as topology_lib
from tfhp.pipelines import datasets
from tfhp.pipelines import example_format
from tfhp.pipelines import preprocessing



def _pipeline(data_dir, subset='train', **kwargs):
    args = dict(batch_size=4, image_size=12, num_classes=shapes.NUM_CLASSES,
                shuffle_buffer_size=5, seed=3)
    args.update(kwargs)
    return datasets.DatasetPipeline(example_format.shard_pattern(data_dir, subset), **args)


def test_each_epoch_reads_every_record_exactly_once(data_dir):
    with tf.Graph().as_default():
        records = _pipeline(data_dir).records()
        next_record = tf.data.make_one_shot_iterator(records).get_next()
        with tf.Session() as sess:
            seen = [sess.run(next_record) for _ in range(3 * 24)]
    epochs = [collections.Counter(seen[e * 24:(e + 1) * 24]) for e in range(3)]
    assert len(epochs[0]) == 24 and set(epochs[0].values()) == {1}
    assert epochs[0] == epochs[1] == epochs[2]
    assert seen[:24] != seen[24:48]  # reshuffled between epochs


def test_one_tower_gets_batches_prefetched_to_its_device(data_dir):
    topo = topology_lib.Topology(tower_devices=('/cpu:1',), variable_devices=('/cpu:0',))
    with tf.Graph().as_default():
        inputs = _pipeline(data_dir).tower_batches(topo)
        assert inputs.warmup_ops == [] and inputs.put_ops == []
        images, labels = inputs.batches[0]
        assert images.device == '/device:CPU:1'
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            got = [sess.run(inputs.batches[0]) for _ in range(6)]  # one epoch of 24
    assert all(i.shape == (4, 12, 12, 3) and -1.0 <= i.min() < i.max() <= 1.0 for i, _ in got)
    assert collections.Counter(np.concatenate([l for _, l in got])) == {
        k: shapes.PER_CLASS for k in range(4)}


def test_several_towers_are_staged_on_their_devices(data_dir):
    topo = topology_lib.Topology.local('cpu', 2)
    with tf.Graph().as_default():
        inputs = _pipeline(data_dir, data_format='NCHW', num_private_threads=1).tower_batches(
            topo)
        assert len(inputs.warmup_ops) == 1
        assert [b[0].device for b in inputs.batches] == ['/device:CPU:0', '/device:CPU:1']
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=2)) as sess:
            session_lib.warm_up(sess, inputs.warmup_ops)
            labels = []
            for _ in range(3):
                batches, _ = sess.run([inputs.batches, inputs.put_ops])
                assert all(images.shape == (4, 3, 12, 12) for images, _ in batches)
                labels.extend(np.concatenate([l for _, l in batches]))
    assert collections.Counter(labels) == {k: shapes.PER_CLASS for k in range(4)}


def test_unstaged_eval_batches_come_in_file_order(data_dir):
    topo = topology_lib.Topology.local('cpu', 1)
    with tf.Graph().as_default():
        inputs = _pipeline(data_dir, 'validation', train=False, staged=False,
                           dtype=tf.bfloat16).tower_batches(topo)
        with tf.Session() as sess:
            first = [sess.run(inputs.batches[0]) for _ in range(6)]
            second = [sess.run(inputs.batches[0]) for _ in range(6)]
    assert first[0][0].dtype == tf.bfloat16.as_numpy_dtype
    for (a, la), (b, lb) in zip(first, second):
        np.testing.assert_array_equal(la, lb)
        np.testing.assert_array_equal(a.astype(np.float32), b.astype(np.float32))


def test_corrupt_records_are_skipped_and_counted(tmp_path):
    pattern = shapes.make_corrupt(str(tmp_path))
    topo = topology_lib.Topology.local('cpu', 1)
    with tf.Graph().as_default():
        inputs = datasets.DatasetPipeline(pattern, 4, 12, 4, train=False, staged=False,
                                          skip_corrupt=True).tower_batches(topo)
        skipped = preprocessing.skipped_records()
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            labels = [sess.run(inputs.batches[0])[1] for _ in range(2)]  # the 8 good records
            assert sess.run(skipped) == 3
            sess.run(inputs.batches[0])  # the next epoch counts its corrupt records again
            assert sess.run(skipped) == 4
    np.testing.assert_array_equal(np.concatenate(labels), [0, 1, 2, 3, 0, 1, 2, 3])


def test_corrupt_record_fails_the_step_by_default(tmp_path):
    pattern = shapes.make_corrupt(str(tmp_path))
    with tf.Graph().as_default():
        inputs = datasets.DatasetPipeline(pattern, 4, 12, 4, train=False,
                                          staged=False).tower_batches(
                                              topology_lib.Topology.local('cpu', 1))
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError):
                sess.run(inputs.batches[0])


def test_an_all_corrupt_data_set_fails_instead_of_searching_forever(tmp_path):
    with tf.io.TFRecordWriter(str(tmp_path / 'train-00000-of-00001')) as writer:
        for i in range(3):
            writer.write(b'not an Example %d' % i)
    with tf.Graph().as_default():
        inputs = datasets.DatasetPipeline(
            str(tmp_path / 'train-*'), 2, 12, 4, staged=False,
            skip_corrupt=True).tower_batches(topology_lib.Topology.local('cpu', 1))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with pytest.raises(tf.errors.InvalidArgumentError,
                               match='skipped 1000 corrupt records in a row'):
                sess.run(inputs.batches[0])


@pytest.mark.parametrize('cut, skipped_after_3_batches', [
    # One shard: 4 whole records, then its cut 5th; the count reaches each batch one epoch on.
    ('data', 2), ('header', 2),
    # A whole shard and a partial one, interleaved: the partial one counts in every batch.
    ('partial', 3),
])
def test_a_cut_short_file_is_read_to_its_cut_then_counted_as_skipped(tmp_path, cut,
                                                                     skipped_after_3_batches):
    pattern = shapes.make_cut_short(str(tmp_path), cut)
    with tf.Graph().as_default():
        inputs = datasets.DatasetPipeline(pattern, 4, 12, 4, train=False, staged=False,
                                          skip_corrupt=True).tower_batches(
                                              topology_lib.Topology.local('cpu', 1))
        skipped = preprocessing.skipped_records()
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            labels = [sorted(sess.run(inputs.batches[0])[1]) for _ in range(3)]
            assert sess.run(skipped) == skipped_after_3_batches
    assert labels == [[0, 1, 2, 3]] * 3  # each batch: the 4 whole records of one epoch


def test_a_cut_short_file_fails_the_step_unless_skipped(tmp_path):
    pattern = shapes.make_cut_short(str(tmp_path), 'data')
    with tf.Graph().as_default():
        inputs = datasets.DatasetPipeline(pattern, 4, 12, 4, train=False,
                                          staged=False).tower_batches(
                                              topology_lib.Topology.local('cpu', 1))
        with tf.Session() as sess:
            sess.run(inputs.batches[0])  # the 4 whole records
            with pytest.raises(tf.errors.DataLossError, match='truncated record'):
                sess.run(inputs.batches[0])


def _read_records(records, count):
    next_record = tf.data.make_one_shot_iterator(records).get_next()
    with tf.Session() as sess:
        return [sess.run(next_record) for _ in range(count)]


def test_caching_reads_the_files_once(tmp_path):
    # The files are emptied after the first epoch: the second one comes from memory.
    directory = str(tmp_path)
    shapes.make_shapes(directory)
    pattern = example_format.shard_pattern(directory, 'validation')
    with tf.Graph().as_default():
        records = datasets.DatasetPipeline(pattern, 4, 12, shapes.NUM_CLASSES, train=False,
                                           use_caching=True).records()
        next_record = tf.data.make_one_shot_iterator(records).get_next()
        with tf.Session() as sess:
            first = [sess.run(next_record) for _ in range(24)]
            for path in tf.io.gfile.glob(pattern):
                open(path, 'wb').close()
            second = [sess.run(next_record) for _ in range(24)]
    assert len(set(first)) == 24 and second == first  # in file order: train=False


def test_repeat_cached_sample_repeats_one_record(data_dir):
    with tf.Graph().as_default():
        seen = _read_records(_pipeline(data_dir, repeat_cached_sample=True).records(), 30)
    assert len(set(seen)) == 1

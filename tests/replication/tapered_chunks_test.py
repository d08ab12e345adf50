"""The pipelined transfer's chunks: equal as TensorFlow's partitioner cuts them, or tapered (small
at either end of each ps task's chain), made as slices that train and save as the whole."""
import dataclasses

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import build
from tfhp import config as config_lib
from tfhp import topology as topology_lib
from tfhp.replication import device_setters
from tfhp.replication import master_copies
from tfhp.replication import partitioning

KIB = 1024


@pytest.mark.parametrize('shape, max_bytes', [([1 << 20], 256 * KIB), ([1000, 7], 4 * KIB),
                                              ([10, 3, 3], 100)])
def test_equal_chunks_are_the_partitioners(shape, max_bytes):
    with tf.Graph().as_default():
        whole = tf.get_variable('v', shape, partitioner=tf.variable_axis_size_partitioner(
            max_bytes))
        expected = [v.shape[0] for v in whole]
    row_bytes = 4 * int(np.prod(shape[1:]))
    assert partitioning.chunk_rows(shape[0], row_bytes, max_bytes) == expected


@pytest.mark.parametrize('num_ps', [1, 2, 3])
def test_each_ps_tasks_chain_tapers_at_both_ends(num_ps):
    # null_dense's vector, 1 MiB chunks tapered from 64 KiB, placed as a job places them.
    rows = partitioning.chunk_rows(1 << 22, 4, 1 << 20, 64 * KIB, repeats=num_ps)
    assert sum(rows) == 1 << 22
    placer = device_setters.GreedyByBytes(range(num_ps))
    chains = [[] for _ in range(num_ps)]
    for index, count in enumerate(rows):
        chains[placer.assign(index, 4 * count)].append(4 * count // KIB)
    for chain in chains:
        assert chain[:4] == [64, 128, 256, 512] and chain[-4:] == [512, 256, 128, 64]
        assert 512 < min(chain[4:-4]) and max(chain) <= 1024
    # Fewer chunks than 256 KiB ones (64 over the tasks), the ends as small as 64 KiB ones.
    assert len(rows) == {1: 23, 2: 30, 3: 36}[num_ps]


def test_a_small_variable_tapers_as_far_as_its_rows_go():
    # Rows go to either end in turn; the last taken gets what is left, and no middle is left.
    assert partitioning.chunk_rows(10, 1, 8, 2, repeats=2) == [2, 2, 2, 2, 2]
    assert partitioning.chunk_rows(7, 1, 8, 2) == [2, 3, 2]


def _tapered_copies():
    """A tower copy of a 4096 x 10 weight (160 KiB, glorot by default) in chunks of at most
    32 KiB tapered from 4 KiB, and its masters."""
    copies = master_copies.MasterCopies(
        ['/cpu:0'], lambda op: '/cpu:0',
        slicing=partitioning.chunks_of(32 * KIB, 4 * KIB, repeats=1))
    with copies.tower_scope(0):
        weight = tf.get_variable('dense/weight', [4096, 10])
    return copies, weight


def test_tapered_slices_initialise_train_and_save_as_the_whole(tmp_path):
    with tf.Graph().as_default():
        copies, weight = _tapered_copies()
        masters = copies.masters()
        # Rows of 40 bytes: 102 (4 KiB), doubling below 819 (32 KiB); what is left between.
        assert [m.shape[0] for m in masters] == [102, 204, 408, 816, 518, 518, 816, 408, 204,
                                                 102]
        assert [m.op.name for m in masters][:2] == ['dense/weight/part_0', 'dense/weight/part_1']
        refresh = copies.refresh('/cpu:0')
        saver = tf.train.Saver(masters)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(tf.local_variables_initializer())
            sess.run(refresh)
            value, copied = sess.run([tf.concat(masters, 0), tf.convert_to_tensor(weight)])
            saver.save(sess, str(tmp_path / 'ckpt'))
    # Each slice drawn with the whole's fans, as a partitioner's is: glorot's limit for 4096 x 10.
    assert np.abs(value).max() <= np.sqrt(6.0 / (4096 + 10))
    assert np.abs(value).max() > 0.9 * np.sqrt(6.0 / (4096 + 10))
    np.testing.assert_array_equal(copied, value)
    # Saved as one variable: a graph holding it whole restores it.
    with tf.Graph().as_default():
        whole = tf.get_variable('dense/weight', [4096, 10])
        with tf.Session() as sess:
            tf.train.Saver([whole]).restore(sess, str(tmp_path / 'ckpt'))
            np.testing.assert_array_equal(sess.run(whole), value)


def _build_worker(model, **cluster_fields):
    """A worker's graph of `model` on 2 ps tasks, distributed_replicated with cluster_fields."""
    cluster = config_lib.ClusterConfig(
        job_name='worker', task_index=0, ps_hosts=('127.0.0.1:2000', '127.0.0.1:2001'),
        worker_hosts=('127.0.0.1:2002',), **cluster_fields)
    cfg = dataclasses.replace(
        testing.small_config(model=model, image_size=8, optimizer={'weight_decay': 0.0}),
        cluster=cluster,
        replication=config_lib.ReplicationConfig(variable_update='distributed_replicated'))
    return build.build(cfg, topology_lib.for_config(cfg))


def test_the_flags_taper_each_ps_tasks_chunks():
    built = _build_worker('null_dense', ps_pipeline_bytes=1 << 20, ps_pipeline_taper_bytes=64 * KIB)
    chains = {}
    for v in built.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES):
        if v.op.name.startswith('null/dense/part_'):
            task = tf.DeviceSpec.from_string(v.device).task
            chains.setdefault(task, []).append(v.shape.num_elements() * 4 // KIB)
    assert sorted(chains) == [0, 1]
    for chain in chains.values():
        assert chain[:4] == [64, 128, 256, 512] and chain[-4:] == [512, 256, 128, 64]
        assert sum(chain) == 8 * KIB


def test_a_tapered_chunk_read_by_a_lookup_is_refused():
    # null_sparse's table is read by embedding_lookup('div'), which takes its slices as equal.
    with pytest.raises(ValueError, match=r'null/embedding/part_0 is read by a lookup .* '
                                         r'needs equal chunks'):
        _build_worker('null_sparse', ps_pipeline_bytes=1 << 20, ps_pipeline_taper_bytes=256 * KIB)

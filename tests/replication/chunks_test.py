"""A chunked ps transfer's chunks: equal as TensorFlow's partitioner cuts them, made as slices
that train and save as the whole."""
import dataclasses

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import build
from tfhp import config as config_lib
from tfhp import topology as topology_lib
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


def _chunked_copies():
    """A tower copy of a 4096 x 10 weight (160 KiB, glorot by default) in chunks of at most
    32 KiB, and its masters."""
    copies = master_copies.MasterCopies(
        ['/cpu:0'], lambda op: '/cpu:0', slicing=partitioning.chunks_of(32 * KIB))
    with copies.tower_scope(0):
        weight = tf.get_variable('dense/weight', [4096, 10])
    return copies, weight


def test_chunks_initialise_train_and_save_as_the_whole(tmp_path):
    with tf.Graph().as_default():
        copies, weight = _chunked_copies()
        masters = copies.masters()
        # Rows of 40 bytes, at most 819 (32 KiB) a chunk: 4096 rows in 6.
        assert [m.shape[0] for m in masters] == [683, 683, 683, 683, 682, 682]
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


def test_the_default_transfer_cuts_each_ps_tasks_share_into_its_chunks():
    # null_dense's 16 MiB vector, pull-clocked in 256 KiB chunks (tfhp.modes.DEFAULT_CHUNK_BYTES)
    # unless the flags say otherwise, dealt over the 2 ps tasks.
    for fields, chunk_kib in (({}, 256), ({'ps_chunk_bytes': 1 << 20}, 1024)):
        built = _build_worker('null_dense', **fields)
        chains = {}
        for v in built.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES):
            if v.op.name.startswith('null/dense/part_'):
                task = tf.DeviceSpec.from_string(v.device).task
                chains.setdefault(task, []).append(v.shape.num_elements() * 4 // KIB)
        assert sorted(chains) == [0, 1]
        for chain in chains.values():
            assert chain == [chunk_kib] * (8 * KIB // chunk_kib)
    whole = _build_worker('null_dense', ps_transfer='whole_step')
    assert not [v for v in whole.graph.get_collection(tf.GraphKeys.GLOBAL_VARIABLES)
                if '/part_' in v.op.name]

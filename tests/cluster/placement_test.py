"""Between-graph graphs, built without servers: where variables go and what gradients travel."""
import dataclasses

import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import build
from tfhp import config as config_lib
from tfhp import topology as topology_lib

PS = ('127.0.0.1:2000', '127.0.0.1:2001')
WORKERS = ('127.0.0.1:2002', '127.0.0.1:2003')


def _worker_graph(model='trivial', sync=True, partition_min_bytes=0, update='parameter_server',
                  num_devices=1):
    cluster = config_lib.ClusterConfig(job_name='worker', task_index=1, ps_hosts=PS,
                                       worker_hosts=WORKERS, cross_replica_sync=sync,
                                       partition_min_bytes=partition_min_bytes)
    cfg = dataclasses.replace(
        testing.small_config(model=model, image_size=8, optimizer={'weight_decay': 0.0},
                             device={'num_devices': num_devices}),
        cluster=cluster, replication=config_lib.ReplicationConfig(variable_update=update))
    return build.build(cfg, topology_lib.for_config(cfg))


def _bytes_per_ps(graph):
    loads = [0] * len(PS)
    for v in graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES):
        loads[tf.DeviceSpec.from_string(v.device).task] += v.shape.num_elements() * 4
    return loads


def test_a_large_variable_is_split_over_the_ps_tasks():
    # trivial at 8x8, 10 classes: logits/weights (4096 x 10 floats, 160 KiB) outweighs the
    # rest together (about 33 KiB), so whole-variable greedy placement is lopsided.
    whole = _bytes_per_ps(_worker_graph().graph)
    split = _bytes_per_ps(_worker_graph(partition_min_bytes=100000).graph)
    assert sum(whole) == sum(split) == 4 * (193 + 4096 * 2 + 4096 * 10 + 10)
    assert max(whole) > 4 * min(whole)
    assert max(split) < 1.25 * min(split)
    graph = _worker_graph(partition_min_bytes=100000).graph
    parts = {v.op.name: v.device for v in graph.get_collection(tf.GraphKeys.TRAINABLE_VARIABLES)
             if 'logits/weights' in v.op.name}
    assert sorted(parts) == ['logits/weights/part_0', 'logits/weights/part_1']
    assert len(set(parts.values())) == 2


@pytest.mark.parametrize('sync', [True, False])
def test_embedding_gradients_stay_sparse(sync):
    built = _worker_graph(model='null_sparse', sync=sync, partition_min_bytes=1 << 20)
    ops = built.graph.get_operations()
    types = {op.type for op in ops}
    if sync:
        # Sparse accumulators on the ps tasks take the rows; nothing densifies the table.
        accumulators = [op for op in ops if op.type == 'ResourceSparseConditionalAccumulator'
                        or op.type == 'SparseConditionalAccumulator']
        assert sorted(tf.DeviceSpec.from_string(op.device).task for op in accumulators) == [0, 1]
    else:
        assert 'ResourceSparseApplyGradientDescent' in types or (
            'ResourceScatterAdd' in types)
    # No op makes a dense gradient of the 16 MiB table (UnsortedSegmentSum densifies).
    assert 'UnsortedSegmentSum' not in types


def test_every_sync_worker_installs_the_protocol_hook_and_only_the_chief_applies():
    built = _worker_graph(sync=True)
    assert len(built.ops.hooks) == 1
    names = [op.name for op in built.graph.get_operations()]
    # A non-chief worker's graph has no apply: only the chief's update loop applies.
    assert not any(n.startswith('apply/') and 'GradientDescent' in n for n in names)

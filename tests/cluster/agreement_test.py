"""The settings every model-building task must share, and the line naming a disagreement."""
import dataclasses

from tfhp import config as config_lib
from tfhp.cluster import agreement
from tfhp.cluster import liveness


def _description(cfg, job='worker', index=1):
    return {'job': job, 'index': index, 'cluster': {'ps': ['127.0.0.1:1']},
            'settings': agreement.settings(cfg)}


def test_workers_with_other_gradient_buckets_are_named_with_both_values():
    # Buckets of another size make collectives that never match: refused at the start.
    mine = config_lib.BenchmarkConfig(
        replication=config_lib.ReplicationConfig(variable_update='collective_all_reduce'),
        cluster=config_lib.ClusterConfig(job_name='worker', task_index=0,
                                         worker_hosts=('127.0.0.1:1', '127.0.0.1:2')))
    theirs = dataclasses.replace(mine, replication=dataclasses.replace(
        mine.replication, fusion_bucket_bytes=1 << 20))
    peer = liveness.Peer('worker', 1, '127.0.0.1:2')
    line = agreement.mismatch(_description(mine), _description(theirs), peer)
    assert line == ('worker task 1 at 127.0.0.1:2 disagrees with this task: '
                    '--fusion_bucket_bytes: 1048576 there, 0 here')
    assert agreement.mismatch(_description(mine), _description(mine), peer) is None


def test_a_task_answering_as_another_is_named():
    cfg = config_lib.BenchmarkConfig()
    peer = liveness.Peer('worker', 1, '127.0.0.1:2')
    line = agreement.mismatch(_description(cfg), _description(cfg, 'ps', 0), peer)
    assert line.startswith('127.0.0.1:2 answers as ps task 0, but this task was told it is '
                           'worker task 1')

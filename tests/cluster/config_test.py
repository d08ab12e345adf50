"""Cluster settings: flags and TF_CONFIG to ClusterConfig, and every refusal naming its flag."""
import json
import os

import pytest

from tests import testing
from tfhp import cli
from tfhp import config as config_lib
from tfhp.cluster import task
from tfhp.config import tf_config

HOSTS = {'ps_hosts': ('127.0.0.1:2000',), 'worker_hosts': ('127.0.0.1:2001', '127.0.0.1:2002')}


def _cluster(**fields):
    return config_lib.ClusterConfig(**dict(HOSTS, **fields))


@pytest.mark.parametrize('fields, message', [
    ({'job_name': 'worker', 'task_index': 2}, "--task_index=2 is outside job 'worker'"),
    ({'job_name': 'ps', 'task_index': -1}, "--task_index=-1 is outside job 'ps'"),
    ({'job_name': 'worker', 'worker_hosts': ('127.0.0.1:99999',)}, "'127.0.0.1:99999' is not"),
    ({'job_name': 'worker', 'ps_hosts': ('no-port',)}, "--ps_hosts: 'no-port' is not"),
    ({'job_name': 'worker', 'ps_hosts': ('127.0.0.1:2001',)}, 'more than one task'),
    ({'job_name': 'chief'}, '--job_name must be one of'),
    ({'job_name': 'worker', 'replicas_to_aggregate': 3}, '--replicas_to_aggregate=3'),
    ({'job_name': 'worker', 'straggler_workers': (5,)}, '--straggler_workers [5]'),
    ({'job_name': 'worker', 'controller_host': '127.0.0.1:2003'}, '--graph_mode=in_graph'),
    ({'job_name': ''}, 'need --job_name'),
])
def test_bad_cluster_is_refused_naming_the_flag(fields, message):
    with pytest.raises(config_lib.ConfigError, match=message.replace('[', r'\[')):
        _cluster(**fields)


def test_cluster_jobs_and_hosts():
    cfg = _cluster(job_name='worker', task_index=1)
    assert cfg.enabled and cfg.num_workers == 2
    assert cfg.jobs() == {'ps': ['127.0.0.1:2000'],
                          'worker': ['127.0.0.1:2001', '127.0.0.1:2002']}
    assert not config_lib.ClusterConfig().enabled


COLLECTIVE = config_lib.ReplicationConfig(variable_update='collective_all_reduce')
REPLICATED = config_lib.ReplicationConfig(variable_update='distributed_replicated')
TARGET = config_lib.RunConfig(target_global_step=40)
STAGED = config_lib.ReplicationConfig(staged_vars=True)
DELTAS = config_lib.ReplicationConfig(variable_update='distributed_replicated',
                                      downlink_compression='sign')


@pytest.mark.parametrize('sections, message', [
    ({'replication': COLLECTIVE}, 'needs a cluster'),
    ({'cluster': _cluster(job_name='worker', cross_replica_sync=False),
      'replication': COLLECTIVE}, 'is synchronous'),
    ({'cluster': _cluster(job_name='worker', ps_hosts=())}, 'needs --ps_hosts'),
    ({'cluster': _cluster(job_name='worker', save_model_secs=5.0)}, 'needs --train_dir'),
    ({'cluster': _cluster(job_name='worker', graph_mode='in_graph'),
      'replication': REPLICATED}, 'builds a graph per worker'),
    ({'run': TARGET}, 'not a run without a cluster'),
    ({'cluster': _cluster(job_name='worker'), 'run': config_lib.RunConfig(forward_only=True),
      'replication': COLLECTIVE},
     '--forward_only between graphs reads the variables on the ps tasks: it needs '
     '--variable_update in parameter_server, distributed_replicated, got '
     "'collective_all_reduce'"),
    ({'cluster': _cluster(job_name='worker', ps_transfer='pipelined')},
     '--ps_transfer=pipelined pushes chunks, which needs --variable_update in '
     'distributed_replicated; parameter_server takes whole_step'),
    ({'cluster': _cluster(job_name='worker', ps_transfer='pipelined',
                          cross_replica_sync=False), 'replication': REPLICATED},
     '--ps_transfer sets how the synchronous between-graph workers of --variable_update in '
     'parameter_server, distributed_replicated reach the ps tasks; got distributed_replicated '
     'asynchronous'),
    ({'cluster': _cluster(job_name='worker', ps_chunk_bytes=1 << 20), 'replication': COLLECTIVE},
     '--ps_chunk_bytes sets how .* got collective_all_reduce$'),
    ({'cluster': _cluster(job_name='worker', ps_transfer='fastest'),
      'replication': REPLICATED},
     "--ps_transfer=fastest: unknown ps_transfer 'fastest'; known: whole_step, "),
    ({'cluster': _cluster(job_name='worker', cross_replica_sync=False), 'run': TARGET},
     'not asynchronous workers'),
    ({'cluster': _cluster(job_name='worker', cross_replica_sync=False),
      'replication': DELTAS}, '--downlink_compression .* without spares '
     r'\(drop --cross_replica_sync=false\)'),
    ({'cluster': _cluster(job_name='worker', replicas_to_aggregate=1),
      'replication': DELTAS}, r'\(drop --replicas_to_aggregate\)'),
    ({'cluster': _cluster(job_name='worker', ps_transfer='background',
                          ps_group_bytes=1 << 16), 'replication': REPLICATED},
     '--ps_group_bytes=65536 does not apply to --ps_transfer=background; the transfers that '
     'take it: priority'),
    ({'cluster': _cluster(job_name='worker', ps_window_bytes=1 << 20),
      'replication': REPLICATED},
     '--ps_window_bytes=1048576 does not apply to --ps_transfer=pull_clocked; the transfers '
     'that take it: pipelined, background, priority'),
    ({'cluster': _cluster(job_name='worker', ps_transfer='whole_step',
                          ps_chunk_bytes=1 << 20), 'replication': REPLICATED},
     '--ps_chunk_bytes=1048576 does not apply to --ps_transfer=whole_step'),
    ({'cluster': _cluster(job_name='worker', ps_transfer='priority',
                          replicas_to_aggregate=1), 'replication': REPLICATED},
     '--ps_transfer=priority needs every worker in each step: drop --replicas_to_aggregate'),
    ({'cluster': _cluster(job_name='worker', ps_transfer='background'),
      'replication': DELTAS},
     '--ps_transfer=background pulls copies of the masters: drop --downlink_compression'),
    ({'cluster': config_lib.ClusterConfig(ps_transfer='whole_step')},
     '--ps_transfer sets how .* got parameter_server in one process'),
    ({'cluster': _cluster(job_name='worker', graph_mode='in_graph'), 'run': TARGET},
     'not an in-graph job'),
    ({'cluster': _cluster(job_name='worker', graph_mode='in_graph'), 'replication': STAGED},
     "--staged_vars across a cluster stages each between-graph worker's reads .*: drop "
     '--graph_mode=in_graph'),
    ({'cluster': _cluster(job_name='worker', partition_min_bytes=1024), 'replication': STAGED},
     '--staged_vars stages whole variables: drop --partition_min_bytes'),
    ({'cluster': _cluster(job_name='worker', cross_replica_sync=False), 'replication': STAGED,
      'staleness': config_lib.StalenessConfig(max_gradient_staleness=2)},
     "--max_gradient_staleness act on measured staleness, which leaves out the lag of "
     "--staged_vars's staged reads"),
])
def test_cross_section_refusals(sections, message):
    with pytest.raises(config_lib.ConfigError, match=message):
        config_lib.BenchmarkConfig(**sections)


@pytest.mark.parametrize('sync', [True, False])
@pytest.mark.parametrize('job_name', ['worker', 'ps'])
def test_staged_vars_run_between_graphs(job_name, sync):
    cfg = config_lib.BenchmarkConfig(
        cluster=_cluster(job_name=job_name, cross_replica_sync=sync), replication=STAGED)
    assert cfg.replication.staged_reads and cfg.cluster.mode.graph_per_worker


@pytest.mark.parametrize('replication', [config_lib.ReplicationConfig(), REPLICATED])
def test_forward_only_runs_between_graphs_on_the_ps_variables(replication):
    cfg = config_lib.BenchmarkConfig(cluster=_cluster(job_name='worker'), replication=replication,
                                     run=config_lib.RunConfig(forward_only=True))
    assert not cfg.trains and cfg.cluster.mode.graph_per_worker


def test_downlink_deltas_run_with_every_worker_in_each_step():
    cfg = config_lib.BenchmarkConfig(cluster=_cluster(job_name='worker', replicas_to_aggregate=2),
                                     replication=DELTAS)
    assert cfg.replication.downlink_compressor().name == 'sign'
    # --compression_fraction may be the downlink's alone: float32 gradients stay float32.
    sparse = config_lib.ReplicationConfig(variable_update='distributed_replicated',
                                          downlink_compression='topk', compression_fraction=0.1)
    assert sparse.compressor() is None and sparse.downlink_compressor().fraction == 0.1


def test_tf_config_chief_becomes_worker_0():
    text = json.dumps({'cluster': {'chief': ['h:1'], 'worker': ['h:2', 'h:3'], 'ps': ['h:4']},
                       'task': {'type': 'worker', 'index': 1}})
    assert tf_config.cluster_fields(text) == {
        'job_name': 'worker', 'task_index': 2, 'ps_hosts': ('h:4',),
        'worker_hosts': ('h:1', 'h:2', 'h:3'), 'controller_host': ''}
    chief = tf_config.cluster_fields(text.replace('"worker", "index": 1', '"chief", "index": 0'))
    assert (chief['job_name'], chief['task_index']) == ('worker', 0)


@pytest.mark.parametrize('text, message', [
    ('{not json', 'not valid JSON'),
    ('{"task": {}}', 'needs a "cluster" object'),
    ('{"cluster": {"evaluator": ["h:1"]}, "task": {"type": "evaluator"}}', 'unsupported job'),
    ('{"cluster": {"worker": "h:1"}, "task": {"type": "worker"}}', 'must be a list'),
])
def test_bad_tf_config_is_refused(text, message):
    with pytest.raises(config_lib.ConfigError, match='TF_CONFIG: .*' + message):
        tf_config.cluster_fields(text)


def test_flags_and_tf_config_map_to_the_config():
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp', '--job_name=worker', '--task_index=1', '--ps_hosts=127.0.0.1:2000',
               '--worker_hosts=127.0.0.1:2001,127.0.0.1:2002', '--replicas_to_aggregate=1',
               '--straggler_workers=0,1', '--straggler_delay_ms=50'])
    try:
        cluster = cli.config_from_flags(cli.FLAGS).cluster
        assert cluster == _cluster(job_name='worker', task_index=1, replicas_to_aggregate=1,
                                   straggler_workers=(0, 1), straggler_delay_ms=50.0)
        cli.FLAGS.unparse_flags()
        cli.FLAGS(['tfhp'])
        text = json.dumps({'cluster': {'worker': list(HOSTS['worker_hosts']),
                                       'ps': list(HOSTS['ps_hosts'])},
                           'task': {'type': 'ps', 'index': 0}})
        cluster = cli.config_from_flags(cli.FLAGS, {'TF_CONFIG': text}).cluster
        assert (cluster.job_name, cluster.task_index, cluster.worker_hosts) == (
            'ps', 0, HOSTS['worker_hosts'])
    finally:
        cli.FLAGS.unparse_flags()


def _flags_config(*args):
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp'] + list(args))
    try:
        return cli.config_from_flags(cli.FLAGS)
    finally:
        cli.FLAGS.unparse_flags()


def test_distributed_all_reduce_is_in_graph_unless_the_flag_says_otherwise():
    """tf_cnn_benchmarks' --variable_update=distributed_all_reduce with a controller: its
    command line names no graph mode; the strategy's row implies in_graph."""
    line = ['--job_name=controller', '--worker_hosts=127.0.0.1:2001,127.0.0.1:2002',
            '--controller_host=127.0.0.1:2003', '--variable_update=distributed_all_reduce',
            '--all_reduce_spec=xring']
    cfg = _flags_config(*line)
    assert cfg.cluster.mode.name == 'in_graph' and cfg.replication.strategy.tower_all_reduce
    with pytest.raises(config_lib.ConfigError, match='--graph_mode=in_graph'):
        _flags_config(*line, '--graph_mode=between_graph')


@pytest.mark.parametrize('use_datasets, expected', [(False, 2 * 3), (True, 0)])
def test_a_task_server_sizes_its_inter_op_pool_as_a_local_run_does(monkeypatch, use_datasets,
                                                                   expected):
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1, 2})   # a 3-core machine
    cfg = testing.small_config(cluster=dict(HOSTS, job_name='worker', task_index=0),
                               data={'data_dir': '/data', 'use_datasets': use_datasets})
    assert task.server_proto(cfg).inter_op_parallelism_threads == expected

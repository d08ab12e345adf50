"""Configuration validation: flags that cannot work are refused with a message naming them."""
import re

import pytest

from tfhp import config as config_lib


@pytest.mark.parametrize('make, flag', [
    (lambda: config_lib.ModelConfig(batch_size=0), '--batch_size'),
    (lambda: config_lib.ModelConfig(batch_size=-3), '--batch_size'),
    (lambda: config_lib.ModelConfig(layer_slice_bytes=-1), '--layer_slice_bytes'),
    (lambda: config_lib.ModelConfig(data_format='NCWH'), '--data_format'),
    (lambda: config_lib.OptimizerConfig(optimizer='lbfgs'), '--optimizer'),
    (lambda: config_lib.OptimizerConfig(learning_rate=0.0), '--learning_rate'),
    (lambda: config_lib.OptimizerConfig(piecewise_learning_rate_schedule='0.1;5'),
     '--piecewise_learning_rate_schedule'),
    (lambda: config_lib.OptimizerConfig(piecewise_learning_rate_schedule='0.1;5;0.01;3;0.1'),
     '--piecewise_learning_rate_schedule'),
    (lambda: config_lib.DeviceConfig(num_devices=0), '--num_devices'),
    (lambda: config_lib.DeviceConfig(device='tpu'), '--device'),
    (lambda: config_lib.DeviceConfig(local_parameter_device='gpu'), '--local_parameter_device'),
    (lambda: config_lib.DeviceConfig(num_intra_threads=-1), '--num_intra_threads'),
    (lambda: config_lib.DeviceConfig(num_inter_threads=-2), '--num_inter_threads'),
    (lambda: config_lib.DataConfig(image_dtype='int8'), '--image_dtype'),
    (lambda: config_lib.RunConfig(num_batches=0), '--num_batches'),
    (lambda: config_lib.RunConfig(eval=True), '--eval'),
    (lambda: config_lib.RunConfig(save_model_steps=5), '--save_model_steps'),
    (lambda: config_lib.DataConfig(batch_group_size=0), '--batch_group_size'),
    (lambda: config_lib.DataConfig(data_dir='/d', use_datasets=True, batch_group_size=2),
     '--batch_group_size=2'),
    (lambda: config_lib.DataConfig(data_dir='/d', staged_input=False, batch_group_size=2),
     '--batch_group_size=2'),
    (lambda: config_lib.DataConfig(data_dir='/d', datasets_use_caching=True),
     '--datasets_use_caching'),
    (lambda: config_lib.DataConfig(data_dir='/d', datasets_repeat_cached_sample=True),
     '--datasets_repeat_cached_sample'),
    (lambda: config_lib.DeviceConfig(kmp_blocktime=30), '--kmp_blocktime'),
    (lambda: config_lib.DeviceConfig(mkl=True, kmp_settings=2), '--kmp_settings'),
    (lambda: config_lib.ReplicationConfig(variable_consistency='eventual'),
     '--variable_consistency'),
    (lambda: config_lib.ReplicationConfig(gradient_compression='topk', compression_fraction=0),
     '--compression_fraction must be in'),
    (lambda: config_lib.ReplicationConfig(gradient_compression='sign', compression_fraction=0.1),
     '--compression_fraction applies to .* not to --gradient_compression=sign'),
    (lambda: config_lib.ReplicationConfig(gradient_transfer_dtype='float16',
                                          compression_fraction=0.1),
     'not to --gradient_transfer_dtype=float16'),
    (lambda: config_lib.ProfileConfig(trace_file='/t', trace_memory=True,
                                      use_chrome_trace_format=False), '--trace_memory'),
    (lambda: config_lib.ReplicationConfig(variable_update='replicated', fusion_bucket_bytes=-1),
     '--fusion_bucket_bytes must be >= 0'),
    (lambda: config_lib.ReplicationConfig(variable_update='replicated', fusion_bucket_bytes=64,
                                          gradient_repacking=2),
     '--fusion_bucket_bytes and --gradient_repacking both pack'),
    (lambda: config_lib.ReplicationConfig(variable_update='collective_all_reduce',
                                          fusion_bucket_bytes=64,
                                          agg_small_grads_max_bytes=64),
     '--fusion_bucket_bytes and --agg_small_grads_max_bytes both pack'),
    (lambda: config_lib.ReplicationConfig(variable_update='replicated', collective_subdivs=4),
     "--collective_subdivs sets the ring .* needs --variable_update in collective_all_reduce, "
     "got 'replicated'"),
    (lambda: config_lib.ReplicationConfig(variable_update='collective_all_reduce',
                                          collective_subdivs=-1),
     '--collective_subdivs must be >= 0'),
    (lambda: config_lib.ReplicationConfig(fusion_bucket_bytes=64),
     "--fusion_bucket_bytes applies to .*collective_all_reduce only, got 'parameter_server'"),
    (lambda: config_lib.ReplicationConfig(variable_update='distributed_replicated',
                                          fusion_bucket_bytes=64),
     '--fusion_bucket_bytes applies to'),
    # A payload that cannot be summed needs an all-gather: refused before any graph.
    (lambda: config_lib.ReplicationConfig(variable_update='collective_all_reduce',
                                          gradient_compression='sign'),
     "--gradient_compression=sign cannot be summed, and --variable_update=collective_all_"),
    (lambda: config_lib.ReplicationConfig(variable_update='replicated', all_reduce_spec='xring/nccl',
                                          gradient_compression='topk'),
     '--all_reduce_spec=xring/nccl uses nccl, which has no all-gather'),
    (lambda: config_lib.ReplicationConfig(gradient_compression='topk', momentum_correction=1.0),
     r'--momentum_correction must be in \[0, 1\), got 1.0'),
    (lambda: config_lib.ReplicationConfig(downlink_compression='sign'),
     '--downlink_compression sends deltas to the copies workers keep; it needs '
     "--variable_update in distributed_replicated, got 'parameter_server'"),
    (lambda: config_lib.ReplicationConfig(variable_update='distributed_replicated',
                                          downlink_compression='sign',
                                          compression_fraction=0.1),
     '--compression_fraction applies to .* not to --gradient_compression=none with '
     '--downlink_compression=sign'),
    (lambda: config_lib.ReplicationConfig(momentum_correction=0.9),
     'without --gradient_compression use --optimizer=momentum'),
    # The senders apply the momentum: an update with momentum would apply it twice.
    (lambda: config_lib.BenchmarkConfig(
        optimizer=config_lib.OptimizerConfig(optimizer='momentum'),
        replication=config_lib.ReplicationConfig(gradient_compression='topk',
                                                 momentum_correction=0.9)),
     '--momentum_correction .* must be plain SGD \(--optimizer=sgd\), got --optimizer=momentum'),
    # A between-graph worker's extra steps alone would stall its synchronous peers.
    (lambda: config_lib.BenchmarkConfig(
        replication=config_lib.ReplicationConfig(variable_update='distributed_replicated'),
        profile=config_lib.ProfileConfig(tfprof_file='/tmp/p.pb'),
        cluster=config_lib.ClusterConfig(job_name='worker', task_index=0, ps_hosts=('h:1',),
                                         worker_hosts=('h:2', 'h:3'))),
     '--tfprof_file profiles extra steps of one process; between graphs trace'),
])
def test_invalid_settings_name_the_flag(make, flag):
    with pytest.raises(config_lib.ConfigError, match=flag):
        make()


def test_piecewise_schedule_parses():
    boundaries, rates = config_lib.parse_piecewise_schedule('0.3;10;0.03;20;0.003')
    assert boundaries == [10.0, 20.0]
    assert rates == [0.3, 0.03, 0.003]


def test_config_is_json_ready():
    d = config_lib.BenchmarkConfig().to_dict()
    assert d['model']['name'] == 'trivial'
    assert d['run']['num_batches'] == 100


def _paths(train_dir=None, result_file=None, trace_file=None, **run):
    """A BenchmarkConfig writing to the given output paths."""
    return config_lib.BenchmarkConfig(
        run=config_lib.RunConfig(train_dir=train_dir, result_file=result_file, **run),
        profile=config_lib.ProfileConfig(trace_file=trace_file))


@pytest.mark.parametrize('flag, make_path, reason', [
    ('train_dir', lambda d: d / 'a_file', 'is a file, not a directory'),
    ('train_dir', lambda d: d / 'missing' / 'train', 'parent directory .*missing does not exist'),
    ('train_dir', lambda d: d / 'a_file' / 'train', 'parent directory .*a_file is not a dir'),
    ('train_dir', lambda d: '/proc/tfhp_no/x', 'parent directory /proc/tfhp_no does not exist'),
    ('train_dir', lambda d: '/proc/tfhp_x', 'cannot write in /proc '),
    ('result_file', lambda d: d, 'is a directory, not a file'),
    ('result_file', lambda d: '%s/' % (d / 'new'), 'is a directory, not a file'),
    ('result_file', lambda d: d / 'missing' / 'r.jsonl', 'parent directory .* does not exist'),
    ('result_file', lambda d: '/proc/tfhp_x', 'cannot write in /proc '),
    ('result_file', lambda d: '/proc/version', 'cannot append to /proc/version'),
    ('result_file', lambda d: '/dev/null', 'is not a regular file'),
    ('trace_file', lambda d: d, 'is a directory, not a file'),
    ('trace_file', lambda d: d / 'missing' / 't.json', 'parent directory .* does not exist'),
    ('trace_file', lambda d: d / 'runmeta_is_a_dir.json', 'runmeta.pb is a directory'),
])
def test_unwritable_output_paths_are_refused_naming_flag_and_path(tmp_path, flag, make_path,
                                                                  reason):
    (tmp_path / 'a_file').write_text('kept')
    (tmp_path / 'runmeta_is_a_dir.json.runmeta.pb').mkdir()
    path = str(make_path(tmp_path))
    with pytest.raises(config_lib.ConfigError) as raised:
        config_lib.check_output_paths(_paths(**{flag: path}), writes_train_dir=True)
    message = str(raised.value)
    assert message.startswith('--%s=%s: ' % (flag, path)) and '\n' not in message
    assert re.search(reason, message), message
    assert (tmp_path / 'a_file').read_text() == 'kept'


def test_writable_output_paths_pass_and_leave_no_trace(tmp_path):
    (tmp_path / 'old.jsonl').write_text('{"run": 1}\n')
    (tmp_path / 'ckpt').mkdir()
    before = sorted(p.name for p in tmp_path.iterdir())
    for run in ({'train_dir': tmp_path / 'ckpt'}, {'train_dir': tmp_path / 'new'},
                {'result_file': tmp_path / 'old.jsonl'}, {'result_file': tmp_path / 'r.jsonl'},
                {'trace_file': tmp_path / 't.json'}):
        config_lib.check_output_paths(_paths(**{k: str(v) for k, v in run.items()}),
                                      writes_train_dir=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == before
    assert not list((tmp_path / 'ckpt').iterdir())
    assert (tmp_path / 'old.jsonl').read_text() == '{"run": 1}\n'


def test_train_dir_is_checked_only_where_it_is_written(tmp_path):
    (tmp_path / 'a_file').touch()
    cfg = _paths(train_dir=str(tmp_path / 'a_file'))
    config_lib.check_output_paths(cfg, writes_train_dir=False)
    # --eval only reads it (a missing checkpoint is refused by the runner).
    config_lib.check_output_paths(_paths(train_dir=str(tmp_path / 'a_file'), eval=True),
                                  writes_train_dir=True)
    with pytest.raises(config_lib.ConfigError, match='--train_dir='):
        config_lib.check_output_paths(cfg, writes_train_dir=True)


@pytest.mark.parametrize('cluster, writes', [
    ({}, True),
    ({'job_name': 'worker', 'task_index': 0}, True),
    ({'job_name': 'worker', 'task_index': 1}, False),
    ({'job_name': 'ps', 'task_index': 0}, False),
    ({'job_name': 'worker', 'task_index': 0, 'graph_mode': 'in_graph'}, True),
    ({'job_name': 'worker', 'task_index': 0, 'graph_mode': 'in_graph',
      'controller_host': 'h:3'}, False),
    ({'job_name': 'controller', 'graph_mode': 'in_graph', 'controller_host': 'h:3'}, True),
])
def test_the_chief_or_in_graph_client_writes_the_train_dir(cluster, writes):
    if cluster:
        cluster = dict(cluster, ps_hosts=('h:1',), worker_hosts=('h:2', 'h:4'))
    assert config_lib.writes_train_dir(config_lib.ClusterConfig(**cluster)) is writes


def test_mkl_exports_the_openmp_settings_of_tf_cnn_benchmarks():
    assert config_lib.DeviceConfig().openmp_environment() == {}
    assert config_lib.DeviceConfig(mkl=True, kmp_blocktime=1,
                                   num_intra_threads=2).openmp_environment() == {
                                       'KMP_BLOCKTIME': '1', 'KMP_SETTINGS': '1',
                                       'KMP_AFFINITY': 'granularity=fine,verbose,compact,1,0',
                                       'OMP_NUM_THREADS': '2'}

"""The in-graph replication flags end to end: runner, checkpoints, CLI, refusals."""
import json
import os
import subprocess
import sys

import pytest

from tests import testing
from tfhp.runner import benchmark
from tfhp import config as config_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _quiet(cfg):
    return benchmark.run(cfg, log=lambda _: None)


def test_checkpoints_move_between_managers_and_tower_counts(tmp_path):
    replicated = testing.small_config(num_batches=2, run={'train_dir': str(tmp_path)},
                                      device={'num_devices': 2},
                                      replication={'variable_update': 'replicated',
                                                   'all_reduce_spec': 'xring'})
    assert _quiet(replicated)['global_step'] == 3  # 1 warm-up + 2 timed
    # The replicated checkpoint holds canonical names: a one-device parameter server resumes.
    assert _quiet(testing.replace(replicated, 'device', num_devices=1))['global_step'] == 6
    # And a three-tower replicated eval restores it into every copy.
    evaluated = _quiet(testing.replace(testing.replace(replicated, 'device', num_devices=3),
                                       'run', eval=True, num_batches=1))
    assert evaluated['global_step'] == 6 and evaluated['num_devices'] == 3


@pytest.mark.parametrize('replication', [
    {'staged_vars': True},
    {'variable_update': 'independent'},
    {'variable_update': 'replicated', 'gradient_transfer_dtype': 'bfloat16',
     'agg_small_grads_max_bytes': 4096},
    {'variable_update': 'replicated', 'all_reduce_spec': 'collective'},
])
def test_each_mode_trains_on_two_devices(replication):
    result = _quiet(testing.small_config(num_batches=2, device={'num_devices': 2},
                                         replication=replication))
    assert result['num_devices'] == 2 and result['global_step'] == 3
    assert result['final_loss'] > 0


@pytest.mark.parametrize('sections, message', [
    ({'replication': {'variable_update': 'replicated', 'all_reduce_spec': 'pscpu:1k:nccl'}},
     '--all_reduce_spec=pscpu:1k:nccl uses nccl, which runs on GPUs only'),
    ({'replication': {'staged_vars': True}, 'run': {'eval': True, 'train_dir': '/tmp/x'}},
     '--staged_vars'),
    ({'replication': {'variable_update': 'replicated'},
      'cluster': {'cross_replica_sync': False}}, 'in-graph asynchronous training'),
    ({'replication': {'gradient_repacking': 2}}, '--gradient_repacking applies to'),
    ({'cluster': {'cross_replica_sync': False}, 'profile': {'trace_file': '/tmp/t.json'}},
     'in-graph asynchronous training runs one step per thread'),
    ({'replication': {'variable_update': 'replicated', 'all_reduce_spec': 'xring',
                      'hierarchical_copy': True}}, '--hierarchical_copy and --all_reduce_spec'),
])
def test_impossible_combinations_are_refused_before_building(sections, message):
    with pytest.raises(config_lib.ConfigError, match=message):
        testing.small_config(**sections)


def test_command_line_takes_tf_cnn_benchmarks_names(tmp_path):
    out = tmp_path / 'r.jsonl'
    base = [sys.executable, '-m', 'tfhp', '--image_size=16', '--batch_size=4',
            '--num_batches=2', '--num_warmup_batches=1', '--num_gpus=2',
            '--variable_update=replicated']
    proc = subprocess.run(base + ['--all_reduce_spec=xring#2', '--gradient_repacking=2',
                                  '--result_file=%s' % out],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    record = json.loads(out.read_text())
    assert record['num_devices'] == 2
    assert record['config']['replication']['all_reduce_spec'] == 'xring#2'
    proc = subprocess.run(base + ['--all_reduce_spec=nccl'], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 2
    assert '--all_reduce_spec=nccl uses nccl' in proc.stderr and 'Traceback' not in proc.stderr

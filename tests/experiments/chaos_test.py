"""The chaos run at its smallest (about half a minute): three faults, one of each kind, into a
supervised job on emulated links; every check kept. Root, namespaces and tc only."""
import json
import os
import subprocess
import sys

import pytest

from experiments import common

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_a_job_hit_by_a_kill_a_pause_and_a_link_down_finishes_and_leaves_nothing(
        tmp_path, links_available):
    result_file = tmp_path / 'chaos.jsonl'
    figure_data = tmp_path / 'chaos_loss.jsonl'
    proc = subprocess.run(
        # 300 steps of 30 ms: 9 s unfaulted; the three faults come 2-3 s apart from the first
        # step, so the last lands by 9 s, while the job, slowed by the first two, still runs.
        [sys.executable, '-m', 'experiments.chaos', '--duration_s=30', '--interval_s=2,3',
         '--for_s=1,4', '--faults=3', '--step_ms=30', '--steps=300', '--save_model_steps=10',
         '--seed=2',
         '--result_file=%s' % result_file, '--figure_data=%s' % figure_data],
        capture_output=True, text=True, timeout=420, cwd=common.REPO_ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    record = json.loads(result_file.read_text().splitlines()[-1])
    assert all(record['checks'].values()), record['checks']
    # One of each kind: the kinds come in shuffled rounds.
    assert sorted(f['kind'] for f in record['faults']) == ['kill', 'link_down', 'pause']
    assert record['final_global_step'] == record['target_global_step']
    # The kill ended its attempt; every restart resumed within the checkpoint interval.
    kill, = [f for f in record['faults'] if f['kind'] == 'kill']
    assert kill['outcome'] == 'restart' and record['restarts'] >= 1
    assert all(0 <= f['steps_redone'] <= 10 for f in record['recovery'])
    assert record['checkpoints'] >= record['target_global_step'] // 10
    assert record['processes_left'] == [] and record['namespaces_left'] == []
    # The loss figure's data: the restarts, and every step the chief logged, attempt by
    # attempt (each going forward), to the target.
    header, *points = [json.loads(line) for line in figure_data.read_text().splitlines()]
    assert header['kind'] == 'loss'
    assert header['command'].startswith('python -m experiments.chaos')
    assert len(header['restarts']) == len(record['recovery'])
    attempts = list(dict.fromkeys(p['attempt'] for p in points))
    assert len(attempts) >= 2 and points[-1]['step'] == record['target_global_step']
    steps = [[p['step'] for p in points if p['attempt'] == a] for a in attempts]
    assert all(run == sorted(set(run)) for run in steps)

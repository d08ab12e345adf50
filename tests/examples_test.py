"""The examples of docs/guide.md run, at tiny sizes, and print what the guide says they print.

Each example runs as its own process (as a reader runs it), with a timeout; the assertions read
its output: the staging areas' sizes after each warm-up prefix, the replicated copies equal
after post_init_ops and every step, the between-graph workers' global steps.
"""
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(script, *args, timeout=120):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    proc = subprocess.run([sys.executable, os.path.join(ROOT, 'examples', script)] + list(args),
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_pipelined_step_warms_up_by_prefix_and_analyses_a_traced_step(tmp_path):
    out = _run('pipelined_step.py', '--data_dir=%s' % (tmp_path / 'data'), '--examples=32',
               '--image_size=16', '--batch_size=4', '--steps=2',
               '--trace_dir=%s' % (tmp_path / 'traces'))
    sizes = {label: [int(n) for n in re.findall(r'\d+', found)] for label, found in
             re.findall(r'^(warmup_\d|step)\s.*staging sizes \[([\d, ]*)\]', out, re.M)}
    # S1 (host) then S2 (device): the first prefix fills S1, the second moves that batch on
    # and refills S1; after a step each area still holds one set.
    assert sizes == {'warmup_1': [1, 0], 'warmup_2': [1, 1], 'step': [1, 1]}, out
    traces = {f for f in os.listdir(tmp_path / 'traces') if f.endswith('.json')}
    assert traces == {'warmup_1.json', 'warmup_2.json', 'step.json'}
    assert re.search(r'^step 2: loss [\d.]+$', out, re.M), out
    # The traced step was analysed: every stage of the hand-built graph took time in it.
    assert 'time per stage, ms' in out
    stages = re.search(r'^stages with time: (.*)$', out, re.M).group(1).split(', ')
    assert {'input', 'preprocess', 'staging', 'forward', 'backward', 'apply'} <= set(stages)
    assert 'after draining: staging sizes [0, 0]' in out


def test_towers_copies_equal_after_post_init_and_match_one_tower():
    out = _run('towers.py', '--num_towers=2', '--all_reduce_spec=xring', '--steps=2')
    assert float(re.search(r'after init: copies differ by ([\d.]+)', out).group(1)) > 0
    assert 'a step before post_init_ops fails: the variable copies of the towers were never ' \
        'made equal' in out
    assert 'after post_init_ops: copies differ by 0.0000' in out
    steps = re.findall(r'^step (\d): loss [\d.]+, global_step (\d), copies differ by (\S+)$',
                       out, re.M)
    assert steps == [('1', '1', '0'), ('2', '2', '0')], out
    diff = float(re.search(r'max difference (\S+)$', out, re.M).group(1))
    assert diff < 1e-5, out


@pytest.mark.cluster
def test_between_graph_workers_train_and_every_process_ends():
    steps, workers = 3, 2
    out = _run('between_graph.py', '--num_workers=%d' % workers, '--steps=%d' % steps,
               '--batch_size=4', '--timeout_s=60', timeout=180)
    for w in range(workers):
        mine = re.findall(r'^\[worker %d\] step (\d): loss [\d.]+, global_step now (\d+)$'
                          % w, out, re.M)
        assert [int(i) for i, _ in mine] == list(range(1, steps + 1)), out
        # Asynchronous updates: each of mine moved the shared global step on.
        global_steps = [int(g) for _, g in mine]
        assert global_steps == sorted(set(global_steps)), out
        assert '[worker %d] done: %d steps' % (w, steps) in out
        assert '[ps 0] worker %d is done' % w in out
    assert '[ps 0] every worker is done; global_step %d' % (workers * steps) in out
    assert 'exit statuses: ps 0: 0, worker 0: 0, worker 1: 0' in out

"""The examples of docs/guide.md run, at tiny sizes, and print what the guide says they print.

Each example runs as its own process (as a reader runs it), with a timeout; the assertions read
its output: the staging areas' sizes after each warm-up prefix, the replicated copies equal
after post_init_ops and every step, the between-graph workers' global steps.

The examples this run's tests read start together, when the first of those tests asks for its
output: they are independent processes, each mostly TensorFlow's import on one core, so two
cores run them sooner together than one after another (10.8 s instead of 14.7 s for the three,
on the 2-core development box). Under pytest-xdist each starts when its test asks for it: a
worker runs only some of the tests, and the other worker keeps the other core busy.
"""
import os
import re
import sys

import pytest

from tests import testing

ROOT = testing.ROOT
STEPS, WORKERS = 3, 2  # of the between-graph example
# Each example's script and flags ({dir}: a folder of its own) and its timeout in seconds.
EXAMPLES = {
    'pipelined_step': (['pipelined_step.py', '--data_dir={dir}/data', '--examples=32',
                        '--image_size=16', '--batch_size=4', '--steps=2',
                        '--trace_dir={dir}/traces'], 120),
    'towers': (['towers.py', '--num_towers=2', '--all_reduce_spec=xring', '--steps=2'], 120),
    'between_graph': (['between_graph.py', '--num_workers=%d' % WORKERS, '--steps=%d' % STEPS,
                       '--batch_size=4', '--timeout_s=60'], 180),
}


@pytest.fixture(scope='module')
def started(request, tmp_path_factory):
    """The examples, those this run's tests read started at once (`testing.Started`,
    `testing.selected`)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    commands = {name: [sys.executable, os.path.join(ROOT, 'examples', script)] + flags
                for name, ([script, *flags], _) in EXAMPLES.items()}
    processes = testing.Started(commands, tmp_path_factory.mktemp('examples'), env,
                                ahead=testing.selected(request))
    yield processes
    processes.end()


def _output(started, name):
    """(stdout, folder) of example `name`, which ended with status 0."""
    status, out, err, folder = started.result(name, EXAMPLES[name][1])
    assert status == 0, out + err
    return out, folder


@testing.reads('pipelined_step')
def test_pipelined_step_warms_up_by_prefix_and_analyses_a_traced_step(started):
    out, tmp_path = _output(started, 'pipelined_step')
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


@testing.reads('towers')
def test_towers_copies_equal_after_post_init_and_match_one_tower(started):
    out, _ = _output(started, 'towers')
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
@testing.reads('between_graph')
def test_between_graph_workers_train_and_every_process_ends(started):
    steps, workers = STEPS, WORKERS
    out, _ = _output(started, 'between_graph')
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

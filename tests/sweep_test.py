"""The sweep: grid products, the ranking, refused points, and the best flags line."""
import json

import pytest

from tfhp import sweep
from tfhp.launcher import forked_task

TRIVIAL = ['--model=trivial', '--image_size=8', '--batch_size=2', '--num_warmup_batches=0']


def test_grid_is_the_product_of_the_value_lists():
    assert sweep.grid_points(['variable_update=parameter_server,replicated',
                              '--num_devices=1,2']) == [
        {'variable_update': 'parameter_server', 'num_devices': '1'},
        {'variable_update': 'parameter_server', 'num_devices': '2'},
        {'variable_update': 'replicated', 'num_devices': '1'},
        {'variable_update': 'replicated', 'num_devices': '2'}]
    assert sweep.point_flags({'a': '1', 'b': 'x'}) == ['--a=1', '--b=x']
    with pytest.raises(ValueError, match='must be flag=value1'):
        sweep.grid_points(['variable_update'])
    with pytest.raises(ValueError, match='names --a twice'):
        sweep.grid_points(['a=1', 'a=2'])


def test_rank_orders_by_images_per_sec_and_keeps_failures():
    outcomes = [sweep.Outcome({'p': 1}, {'images_per_sec': 10.0}, None),
                sweep.Outcome({'p': 2}, None, 'refused: no'),
                sweep.Outcome({'p': 3}, {'images_per_sec': 30.0}, None)]
    ranked, failed = sweep.rank(outcomes)
    assert [o.args['p'] for o in ranked] == [3, 1]
    assert [o.args['p'] for o in failed] == [2]


def test_sweep_runs_each_point_and_prints_the_best_command(tmp_path, capsys):
    results = tmp_path / 'sweep.jsonl'
    status = sweep.main(['--grid=variable_update=parameter_server,replicated',
                         '--grid=all_reduce_spec=xring', '--result_file=%s' % results, '--',
                         '--model=trivial', '--image_size=8', '--batch_size=2',
                         '--num_devices=2', '--num_batches=2', '--num_warmup_batches=1'])
    out = capsys.readouterr().out
    assert status == 0
    # parameter_server takes no all-reduce: refused by tfhp before any graph, with the reason.
    assert '--variable_update=parameter_server --all_reduce_spec=xring: refused: ' \
           '--all_reduce_spec applies to --variable_update' in out
    assert ('best: python -m tfhp --model=trivial --image_size=8 --batch_size=2 '
            '--num_devices=2 --num_batches=2 --num_warmup_batches=1 '
            '--variable_update=replicated --all_reduce_spec=xring') in out
    lines = [json.loads(line) for line in results.read_text().splitlines()]
    assert [line.get('error') is None for line in lines[:2]] == [False, True]
    assert lines[1]['result']['images_per_sec'] > 0
    assert lines[2]['best_flags'][-2:] == ['--variable_update=replicated',
                                           '--all_reduce_spec=xring']


def test_env_axes_set_the_environment_not_flags():
    [point] = sweep.grid_points(['env:TF_ENABLE_ONEDNN_OPTS=0', 'num_intra_threads=1'])
    assert sweep.point_flags(point) == ['--num_intra_threads=1']
    assert sweep.point_env(point) == {'TF_ENABLE_ONEDNN_OPTS': '0'}
    assert sweep.describe(point) == 'TF_ENABLE_ONEDNN_OPTS=0 --num_intra_threads=1'


def test_run_tfhp_gives_the_process_its_environment(tmp_path):
    # A sitecustomize on the child's PYTHONPATH ends it at start-up: the variable reached it.
    (tmp_path / 'sitecustomize.py').write_text('import os\nos._exit(3)\n')
    outcome = sweep.run_tfhp(['--model=trivial'], timeout_s=60,
                             env={'PYTHONPATH': str(tmp_path)})
    assert outcome.result is None and outcome.error.startswith('failed (exit status 3)')


def test_run_tfhp_forks_from_the_named_forkserver(monkeypatch):
    # conftest names the session's forkserver; a run it cannot fork would go by exec.
    forks = []

    def counted(*args, **kwargs):
        task = real(*args, **kwargs)
        forks.append(task.pid)
        return task
    real = forked_task.ForkedTask
    monkeypatch.setattr(forked_task, 'ForkedTask', counted)
    outcome = sweep.run_tfhp(TRIVIAL + ['--num_batches=2'], timeout_s=60)
    assert outcome.error is None and outcome.result['num_steps'] == 2
    assert len(forks) == 1


def test_a_forked_run_past_its_bound_is_killed_and_named():
    outcome = sweep.run_tfhp(TRIVIAL + ['--num_batches=10000000'], timeout_s=3)
    assert outcome.result is None and outcome.error == 'timed out after 3 s'


def test_repeats_run_in_rounds_and_rank_by_the_median(monkeypatch, tmp_path, capsys):
    rates = {'1': [30.0, 10.0, 20.0], '2': [25.0, 24.0, 26.0]}  # medians 20 and 25
    calls = []

    def fake_run(args, timeout_s, env):
        intra = args[-1].split('=')[1]
        calls.append((intra, env['TF_ENABLE_ONEDNN_OPTS']))
        rate = rates[intra][sum(c[0] == intra for c in calls) - 1]
        return sweep.Outcome(args, {'images_per_sec': rate, 'step_time_ms': {'p50': 1.0}}, None)
    monkeypatch.setattr(sweep, 'run_tfhp', fake_run)
    results = tmp_path / 'sweep.jsonl'
    assert sweep.main(['--repeats=3', '--grid=env:TF_ENABLE_ONEDNN_OPTS=0',
                       '--grid=num_intra_threads=1,2', '--result_file=%s' % results, '--',
                       '--model=lenet']) == 0
    # Rounds over the grid, not one point's runs back to back.
    assert [c[0] for c in calls] == ['1', '2'] * 3 and {c[1] for c in calls} == {'0'}
    out = capsys.readouterr().out
    assert ('best: TF_ENABLE_ONEDNN_OPTS=0 python -m tfhp --model=lenet '
            '--num_intra_threads=2') in out
    ranking = json.loads(results.read_text().splitlines()[-1])
    assert [r['images_per_sec'] for r in ranking['ranking']] == [25.0, 20.0]
    assert ranking['best_env'] == {'TF_ENABLE_ONEDNN_OPTS': '0'} and ranking['repeats'] == 3


def test_a_refused_point_is_not_run_again(monkeypatch, capsys):
    calls = []

    def refused(args, timeout_s, env):
        calls.append(args)
        return sweep.Outcome(args, None, 'refused: --data_format=NCHW: no')
    monkeypatch.setattr(sweep, 'run_tfhp', refused)
    assert sweep.main(['--repeats=3', '--grid=data_format=NCHW', '--', '--model=lenet']) == 1
    assert len(calls) == 1 and 'no point ran' in capsys.readouterr().out

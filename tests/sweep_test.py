"""The sweep: grid products, the ranking, refused points, and the best flags line."""
import json

import pytest

from tfhp import sweep


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

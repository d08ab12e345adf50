"""The repeat statistics, against numbers worked out by hand."""
import pytest

from experiments import stats


def _s(*values):
    return stats.summarise(values)


def test_median_and_range():
    assert _s(3, 1, 2) == {'median': 2, 'min': 1, 'max': 3, 'n': 3, 'values': [3, 1, 2]}
    assert _s(4.0, 1.0, 3.0, 2.0)['median'] == 2.5   # (2 + 3) / 2
    assert _s(7)['median'] == _s(7)['min'] == _s(7)['max'] == 7
    with pytest.raises(ValueError):
        stats.summarise([])


def test_not_reached_ranks_above_every_number():
    # [40, 100, n/r]: the median is the middle value, the max is not reached.
    assert _s(100, None, 40) == {'median': 100, 'min': 40, 'max': None, 'n': 3,
                                 'values': [100, None, 40]}
    # [40, n/r, n/r]: most repeats did not reach, so neither did the median.
    assert _s(None, None, 40)['median'] is None and _s(None, None, 40)['min'] == 40
    # An even count with n/r in the middle pair: the median is not reached either.
    assert _s(10, None)['median'] is None


def test_separation_chance_is_two_over_the_binomial():
    assert stats.separation_p(3, 3) == pytest.approx(2 / 20)      # C(6, 3) = 20
    assert stats.separation_p(5, 5) == pytest.approx(2 / 252)     # C(10, 5) = 252
    assert stats.separation_p(3, 4) == pytest.approx(2 / 35)      # C(7, 3) = 35
    assert stats.separation_p(2, 2) == pytest.approx(1 / 3)       # C(4, 2) = 6
    assert stats.separation_p(1, 1) == 1.0


def test_differs_when_ranges_are_apart_and_repeats_suffice():
    low, high = _s(1, 2, 3), _s(4, 6, 5)
    assert stats.compare(low, high) == -1 and stats.compare(high, low) == 1
    assert stats.compare(_s(1, 2, 4), _s(3, 5, 6)) == 0            # 4 > 3: they overlap
    assert stats.compare(_s(1, 2, 3), _s(3, 4, 5)) == 0            # touching is overlap
    assert stats.compare(_s(1, 2), _s(8, 9)) == 0                  # apart, but chance 1/3
    assert stats.compare(_s(1), _s(9)) == 0
    # Not reached is above every number: all of b below a's slowest reach, or none.
    assert stats.compare(_s(1, 2, 3), _s(5, None, 6)) == -1
    assert stats.compare(_s(1, None, 3), _s(5, 6, 7)) == 0
    assert stats.compare(_s(None, None, None), _s(None, None, None)) == 0


def test_cells():
    assert stats.cell(_s(3, 1, 2), '%d') == '2 [1\u20133]'
    assert stats.cell(_s(3, 1, 2), '%d', mark=True) == '2 [1\u20133] *'
    assert stats.cell(_s(0.5), '%.2f') == '0.50'
    assert stats.cell(_s(100, None, 40), '%d') == '100 [40\u2013n/r]'
    assert stats.cell(_s(None, None), '%d') == 'n/r'


def test_combine_keeps_what_repeats_share_and_summarises_figures():
    runs = [{'label': 'a', 'seed': 1, 'x': 2.0, 'y': None, 'curve': [1]},
            {'label': 'a', 'seed': 2, 'x': 4.0, 'y': 5, 'curve': [2]},
            {'label': 'a', 'seed': 3, 'x': 3.0, 'y': 6, 'curve': [3]}]
    runs.append({'label': 'a', 'seed': 4, 'error': 'failed'})   # no figures: not counted
    record = stats.combine(runs, ['x', 'y', 'absent'], seeds=[1, 2, 3, 4])
    assert record['label'] == 'a' and 'seed' not in record and 'curve' not in record
    assert 'error' not in record
    assert record['x'] == {'median': 3.0, 'min': 2.0, 'max': 4.0, 'n': 3,
                           'values': [2.0, 4.0, 3.0]}
    assert (record['y']['median'], record['y']['max']) == (6, None)
    assert 'absent' not in record
    assert record['repeats'] == 4 and record['seeds'] == [1, 2, 3, 4] and record['runs'] == runs


def test_mark_against_a_reference_and_the_conclusion_lines():
    ref = {'label': 'ref', 'x': _s(1, 2, 3)}
    far, near = {'label': 'far', 'x': _s(7, 8, 9)}, {'label': 'near', 'x': _s(2, 3, 4)}
    stats.mark([ref, far, near], ref, ['x'])
    assert 'vs_reference' not in ref
    assert far['vs_reference'] == {'x': 'higher'} and near['vs_reference'] == {'x': 'within noise'}
    lines = stats.differences('x', [('far', far['x']), ('ref', ref['x']), ('near', near['x'])],
                              '%d', 'is below')
    assert lines == ['x, by median: ref 2, near 3, far 8',
                     '  real (ranges apart): ref is below far; near is below far',
                     '  within noise (ranges overlap, or too few repeats): ref vs near']


def test_table_cells_marks_and_legend(capsys):
    from experiments import common  # pylint: disable=g-import-not-at-top
    ref = {'label': 'ref', 'images': _s(6400, 8000, 9600), 'rate': _s(2e9, 3e9, 4e9)}
    far = {'label': 'far', 'images': _s(12800, 16000, None), 'rate': _s(1e9, 2.5e9, 5e9)}
    stats.mark([ref, far], ref, ['images', 'rate'])
    common.print_table([ref, far], [('row', 'label', None), ('images', 'images', '%d'),
                                     ('GB/s', 'rate', '%.1f', 1e-9)], 'ref')
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ['ref', '8000', '[6400\u20139600]', '3.0', '[2.0\u20134.0]']
    assert lines[2].split() == ['far', '16000', '[12800\u2013n/r]', '*', '2.5', '[1.0\u20135.0]']
    assert lines[3] == ('cells: median [min\u2013max] over 3 repeats; n/r: not reached within '
                        'the budget')
    assert lines[4].startswith('*: range apart from that of ref:')
    with pytest.raises(Exception, match='--repeats=0'):
        common.run_in_rounds([lambda seed: {}], 0, 1)

"""docs/img's figures: each used by a page and drawn from the data kept in docs/results/data by
`python -m experiments.figures`, with the caption of where its numbers were measured."""
import glob
import importlib.util
import json
import os
import re

import pytest
from absl.testing import flagsaver

from experiments.figures import __main__ as figures_main
from experiments.figures import accuracy
from experiments.figures import chaos_loss
from experiments.figures import kept
from experiments.figures import prediction
from experiments.figures import traced_step
from tests import docs_test
from tfhp import plots

needs_matplotlib = pytest.mark.skipif(importlib.util.find_spec('matplotlib') is None,
                                      reason="matplotlib is not installed (pip install -e "
                                             "'.[plots]')")
PAGES = [os.path.join(kept.ROOT, 'README.md')] + glob.glob(
    os.path.join(kept.ROOT, 'docs', '**', '*.md'), recursive=True)


def _figures_in_img():
    """{name: suffixes} of docs/img."""
    found = {}
    for path in os.listdir(kept.IMG_DIR):
        name, _, suffix = path.rpartition('.')
        found.setdefault(name, set()).add(suffix)
    return found


def _referenced():
    names = set()
    for page in PAGES:
        with open(page) as f:
            names |= set(re.findall(r'img/([\w]+)\.(?:png|svg)', f.read()))
    return names


def test_every_figure_is_used_and_drawn_from_data():
    figures = _figures_in_img()
    with_data = set(kept.names())
    assert len(with_data) >= 40
    assert not set(figures) - _referenced(), 'docs/img files no page uses'
    assert not set(figures) - with_data, 'figures without data'
    assert not with_data - set(figures), 'data of figures not in docs/img'
    for name in with_data:
        assert figures[name] == {'png', 'svg'}, name


def _drawn_count(kind, drawn):
    """How many points the drawing call drew: lines and bars a median each, timelines an op
    each, accuracy curves a checkpoint each, the loss a step each."""
    args = drawn['args']
    if kind == 'lines':
        return [s['median'] for _, series, _ in args[0] for entry in series for s in entry[2]]
    if kind == 'bars':
        return [s['median'] for _, _, _, series in args[0] for _, summaries in series
                for s in summaries if s is not None]
    if kind == 'predicted':
        return [s['median'] for _, measured, _ in args[0] for s in measured]
    if kind == 'timeline':
        return sum(len(spans) for _, by_row in args[0] for spans in by_row.values())
    if kind == 'accuracy':
        return sum(len(curve) for _, curves in args[0] for curve in curves)
    if kind == 'loss':
        return sum(len(run) for _, run in args[0])
    raise AssertionError('no count for kind %r' % kind)


@pytest.mark.parametrize('name', kept.names())
def test_each_figure_is_drawn_from_its_data(monkeypatch, name):
    header, points = kept.load(name)
    drawn = {}

    def capture(kind):
        def record(path, *args, **kwargs):
            drawn.update(kind=kind, path=path, args=args, kwargs=kwargs)
        return record
    monkeypatch.setattr(plots, 'line_panels', capture('lines'))
    monkeypatch.setattr(plots, 'bar_panels', capture('bars'))
    monkeypatch.setattr(prediction, 'draw', capture('predicted'))
    monkeypatch.setattr(plots, 'step_timelines', capture('timeline'))
    monkeypatch.setattr(accuracy, 'draw', capture('accuracy'))
    monkeypatch.setattr(chaos_loss, 'draw', capture('loss'))
    monkeypatch.setitem(kept.KINDS, 'stages', capture('stages'))
    files = kept.draw(name, '/nowhere', formats=('svg',))
    assert files == ['/nowhere/%s.svg' % name] and drawn['path'] == files[0]
    assert drawn['kind'] == header['kind']
    # The caption is where the numbers were measured, not where they are drawn.
    caption = drawn['args'][2] if header['kind'] == 'stages' else drawn['kwargs']['caption']
    assert caption.endswith('%s; %s; commit %s' % (header['machine'], header['date'],
                                                   header['commit']))
    assert caption.startswith(header.get('note', header['machine']))
    # The section the numbers come from: a heading of a page of docs/.
    page, _, heading = header['source'].partition('#')
    assert page.startswith('docs/') and heading in docs_test.anchors(page), page
    assert header['command'].startswith('python -m ')
    if header['kind'] == 'stages':  # drawn whole by tfhp.profiling.stage_figure, tested below
        return
    # Every point of the data is drawn, in its series.
    if header['kind'] in ('lines', 'bars', 'predicted'):
        assert sorted(_drawn_count(header['kind'], drawn)) == sorted(
            p['median'] for p in points)
        for p in points:
            assert p['min'] <= p['median'] <= p['max'], (name, p)
    else:
        assert _drawn_count(header['kind'], drawn) == len(points)


@needs_matplotlib
def test_the_command_redraws_a_figure_with_its_caption(tmp_path, monkeypatch, capsys):
    data = tmp_path / 'data'
    data.mkdir()
    header = {'figure': 'tiny', 'kind': 'lines', 'title': 't', 'xlabel': 'workers',
              'ylabel': 'ms', 'machine': 'a machine', 'date': '2026-11-28', 'commit': 'abc1234',
              'command': 'python -m experiments.x', 'source': 'docs/results/x.md'}
    points = [{'panel': 'p', 'series': 'measured', 'x': x, 'median': m, 'min': m - 1,
               'max': m + 1} for x, m in ((1, 10.0), (2, 20.0))]
    points.append({'panel': 'p', 'series': 'the bound', 'x': 1, 'median': 9.0, 'min': 9.0,
                   'max': 9.0, 'computed': True})
    (data / 'tiny.jsonl').write_text('\n'.join(json.dumps(r) for r in [header] + points))
    monkeypatch.setattr(kept, 'DATA_DIR', str(data))
    with flagsaver.flagsaver():
        figures_main.FLAGS(['figures', '--only=tiny', '--out_dir=%s' % tmp_path])
        assert figures_main.main([]) == 0
    assert capsys.readouterr().out.split() == [
        'plot:', str(tmp_path / 'tiny.png'), 'plot:', str(tmp_path / 'tiny.svg')]
    svg = (tmp_path / 'tiny.svg').read_text()
    for text in ('a machine; 2026-11-28; commit abc1234', 'measured', 'the bound'):
        assert text in svg
    assert (tmp_path / 'tiny.png').read_bytes()[:4] == b'\x89PNG'


def test_malformed_data_names_its_file(tmp_path):
    (tmp_path / 'bad.jsonl').write_text('{"figure": "other"}\n')
    with pytest.raises(ValueError, match=r'bad\.jsonl: the first line must be the header'):
        kept.load('bad', str(tmp_path))
    (tmp_path / 'worse.jsonl').write_text('{"figure": "worse"\n')
    with pytest.raises(ValueError, match=r'worse\.jsonl: not JSON lines'):
        kept.load('worse', str(tmp_path))
    (tmp_path / 'odd.jsonl').write_text('{"figure": "odd", "kind": "pie"}\n')
    with pytest.raises(ValueError, match=r"odd\.jsonl: kind 'pie'"):
        kept.draw('odd', str(tmp_path), data_dir=str(tmp_path))


@needs_matplotlib
def test_only_refuses_a_figure_without_data(capsys):
    with flagsaver.flagsaver():
        figures_main.FLAGS(['figures', '--only=no_such_figure'])
        assert figures_main.main([]) == 2
    assert '--only: no data for no_such_figure' in capsys.readouterr().err


def _tiny(tmp_path, monkeypatch, kind, points, **fields):
    """Draws a tiny figure of `kind` from a data file in tmp_path as `python -m
    experiments.figures` would; returns the matplotlib figure it would have saved."""
    header = dict(figure='tiny', kind=kind, title='t', machine='a machine', date='2026-11-30',
                  commit='abc1234', command='python -m experiments.x', **fields)
    (tmp_path / 'tiny.jsonl').write_text('\n'.join(json.dumps(r) for r in [header] + points))
    saved = []
    monkeypatch.setattr(plots, 'save', lambda figure, *args, **kwargs: saved.append(figure))
    kept.draw('tiny', str(tmp_path), formats=('svg',), data_dir=str(tmp_path))
    figure, = saved
    return figure


@needs_matplotlib
def test_a_timeline_draws_a_bar_per_op_in_its_panel_and_row(tmp_path, monkeypatch):
    ops = {'buckets': {'backward wait': [(0.0, 5.0), (5.0, 9.0)], 'all-reduce': [(3.0, 8.0)]},
           'one pack': {'backward wait': [(0.0, 9.0)], 'all-reduce': [(9.0, 14.0),
                                                                      (9.5, 12.0)]}}
    points = [p for panel, by_row in ops.items() for p in traced_step.points(panel, by_row)]
    figure = _tiny(tmp_path, monkeypatch, 'timeline', points,
                   rows=['forward wait', 'backward wait', 'all-reduce'],
                   panel_titles={'buckets': 'with buckets'}, marks={'backward ends': [9.0, 9.0]})
    axes = figure.axes
    assert [ax.get_title(loc='left') for ax in axes] == ['with buckets', 'one pack']
    # A bar per op: its panel's, at its row (ops that ran at once in lanes of that row).
    bars = [[(round(y + h / 2), x, w) for collection in ax.collections
             for (x, w), (y, h) in _spans(collection)] for ax in axes]
    assert sorted(bars[0]) == [(1, 0.0, 5.0), (1, 5.0, 4.0), (2, 3.0, 5.0)]
    assert sorted(bars[1]) == [(1, 0.0, 9.0), (2, 9.0, 5.0), (2, 9.5, 2.5)]
    assert sum(len(b) for b in bars) == len(points)


def _spans(collection):
    """((x, width), (y, height)) of each rectangle of a broken_barh collection."""
    for path in collection.get_paths():
        (x0, y0), (x1, y1) = path.vertices.min(axis=0), path.vertices.max(axis=0)
        yield (x0, x1 - x0), (y0, y1 - y0)


@needs_matplotlib
def test_accuracy_curves_draw_a_line_per_setting_through_every_checkpoint(tmp_path,
                                                                        monkeypatch):
    points = [{'series': series, 'repeat': repeat, 'step': step, 'images': 32 * step,
               'seconds': step / 10.0 + repeat, 'accuracy': accuracy_value}
              for series in ('sync', 'async') for repeat in (1, 2)
              for step, accuracy_value in ((25, 0.3), (50, 0.6), (75, 0.8))]
    figure = _tiny(tmp_path, monkeypatch, 'accuracy', points, target=0.75)
    by_images, by_seconds = figure.axes
    lines = [line for line in by_images.get_lines() if not line.get_label().startswith('target')]
    assert [line.get_label() for line in lines] == ['sync (2 repeats)', 'async (2 repeats)']
    # Through every checkpoint: images on the left, the median seconds of the repeats right.
    assert list(lines[0].get_xdata()) == [800, 1600, 2400]
    assert list(lines[0].get_ydata()) == [0.3, 0.6, 0.8]
    assert list(by_seconds.get_lines()[0].get_xdata()) == [4.0, 6.5, 9.0]


@needs_matplotlib
def test_the_loss_draws_a_line_per_attempt_through_every_step(tmp_path, monkeypatch):
    attempts = [(1, [(s, 2.0 - 0.01 * s) for s in range(1, 38)]),
                (2, [(s, 2.0 - 0.01 * s) for s in range(31, 66)])]
    points = chaos_loss.points(attempts)
    assert len(points) == 37 + 35
    figure = _tiny(tmp_path, monkeypatch, 'loss', points,
                   restarts=[{'attempt': 1, 'reached_step': 37, 'resumed_step': 30}])
    whole = figure.axes[0]
    labelled = [line for line in whole.get_lines() if line.get_label().startswith('attempt')]
    assert [line.get_label() for line in labelled] == ['attempt 1', 'attempt 2']
    assert [list(line.get_xdata()) for line in labelled] == [
        [s for s, _ in run] for _, run in attempts]


@needs_matplotlib
def test_the_stage_breakdown_draws_a_bar_per_stage_and_device_and_per_run(tmp_path,
                                                                         monkeypatch):
    points = [{'device': 'CPU:0', 'stage': 'forward', 'self_ms': 10.0},
              {'device': 'CPU:0', 'stage': 'backward', 'self_ms': 20.0},
              {'device': 'CPU:1', 'stage': 'backward', 'self_ms': 15.0},
              {'run': 'configured', 'step_ms': 40.0}, {'run': 'one device', 'step_ms': 22.0}]
    figure = _tiny(tmp_path, monkeypatch, 'stages', points)
    stages, runs = figure.axes
    segments = [(p.get_y() + p.get_height() / 2, p.get_x(), p.get_width())
                for p in stages.patches if p.get_width()]
    # CPU:0 (row 0) forward then backward; CPU:1 (row 1) backward alone.
    assert sorted(segments) == [(0, 0.0, 10.0), (0, 10.0, 20.0), (1, 0.0, 15.0)]
    assert [p.get_width() for p in runs.patches] == [40.0, 22.0]
    assert [t.get_text() for t in runs.get_yticklabels()] == ['configured', 'one device']

"""Figures for a paper draft: the format by suffix, dpi, series told apart, the legend off the
data, the caption and what it says, a figure's data and the run it names."""
import importlib.util
import json
import subprocess
import sys
import types

import pytest

from experiments.figures import chaos_loss
from tfhp import plots
from tfhp import provenance

needs_matplotlib = pytest.mark.skipif(importlib.util.find_spec('matplotlib') is None,
                                      reason="matplotlib is not installed (pip install -e "
                                             "'.[plots]')")

SAME = [{'median': m, 'min': m - 1.0, 'max': m + 1.0} for m in (10.0, 20.0, 30.0)]
# Two panels; 'a' and 'b' coincide, and 'b' comes first in the second panel.
PANELS = [('one', [('a', [1, 2, 4], SAME), ('b', [1, 2, 4], SAME)], [(35.0, 'ceiling')]),
          ('two', [('b', [1, 2, 4], SAME), ('a', [1, 2, 4], SAME)], [])]


def _draw(path, **options):
    plots.line_panels(str(path), PANELS, 'workers', 'ms', title='t', **options)


@pytest.mark.parametrize('name, expected', [
    ('f.svg', 'svg'), ('F.PDF', 'pdf'), ('f.png', 'png'), ('f', 'png'), ('dir.svg/f', 'png')])
def test_the_suffix_picks_the_format(name, expected):
    assert plots.output_format(name) == expected


@needs_matplotlib
def test_vector_files_are_vector_and_the_same_bytes_each_time(tmp_path):
    for suffix, head in (('svg', b'<?xml'), ('pdf', b'%PDF-')):
        first, second = tmp_path / ('1.' + suffix), tmp_path / ('2.' + suffix)
        _draw(first)
        _draw(second)
        assert first.read_bytes()[:5] == head
        assert first.read_bytes() == second.read_bytes()  # no date, fixed ids
    assert b'<svg' in (tmp_path / '1.svg').read_bytes()


@needs_matplotlib
def test_a_png_has_the_dpi_asked_for(tmp_path):
    from PIL import Image  # pylint: disable=g-import-not-at-top
    sizes = {}
    for dpi in (75, 150):
        _draw(tmp_path / ('%d.png' % dpi), dpi=dpi)
        with Image.open(tmp_path / ('%d.png' % dpi)) as image:
            sizes[dpi] = image.size
            assert round(image.info['dpi'][0]) == dpi
    assert sizes[150][0] / sizes[75][0] == pytest.approx(2.0, rel=0.03)
    assert sizes[150][0] > 1000  # a two-panel figure: 9.4 in at 150 dpi


def _drawn(monkeypatch, draw):
    """Runs `draw` and returns the figure and legend it would have saved, drawn."""
    saved = {}

    def capture(figure, path, dpi, caption, legend=None):
        del path, dpi
        if caption:
            figure.text(0.5, 0.0, caption)
        figure.canvas.draw()
        saved.update(figure=figure, legend=legend)
    monkeypatch.setattr(plots, 'save', capture)
    draw()
    return saved['figure'], saved['legend']


@needs_matplotlib
def test_series_keep_a_marker_each_and_the_legend_sits_under_the_panels(monkeypatch, tmp_path):
    figure, legend = _drawn(monkeypatch, lambda: _draw(tmp_path / 'x.png'))
    markers = [{line.get_label(): (line.get_marker(), line.get_color()) for line in
                ax.get_lines() if not line.get_label().startswith('_')} for ax in figure.axes]
    # errorbar labels its container, not its line: take the styles from the containers.
    styles = [{c.get_label(): (c.lines[0].get_marker(), c.lines[0].get_color(),
                               c.lines[0].get_markerfacecolor()) for c in ax.containers}
              for ax in figure.axes]
    assert styles[0] == styles[1]  # the same look in both panels, whatever the order
    assert styles[0]['a'][0] != styles[0]['b'][0] and styles[0]['a'][1] != styles[0]['b'][1]
    assert styles[0]['a'][2] == 'none'  # open: a marker under another still shows
    assert markers[0] == {'ceiling': ('None', 'black')}
    assert [t.get_text() for t in legend.get_texts()] == ['a', 'b', 'ceiling']
    top = legend.get_window_extent().y1
    assert all(top < ax.get_tightbbox().y0 for ax in figure.axes)  # under every panel
    from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
    pyplot.close(figure)


@needs_matplotlib
def test_a_lone_measured_series_beside_computed_lines_sits_on_its_xs(monkeypatch, tmp_path):
    computed = {'dodge': False, 'marker': None}
    panels = [('one', [('measured', [1, 2], SAME[:2]), ('bound', [1, 2], SAME[:2], computed)],
               []),
              ('two', [('a', [1, 2], SAME[:2]), ('b', [1, 2], SAME[:2]),
                       ('bound', [1, 2], SAME[:2], computed)], [])]
    figure, _ = _drawn(monkeypatch, lambda: plots.line_panels(str(tmp_path / 'x.png'), panels,
                                                              'workers', 'ms'))
    xs = [{c.get_label(): list(c.lines[0].get_xdata()) for c in ax.containers}
          for ax in figure.axes]
    assert xs[0] == {'measured': [1, 2], 'bound': [1, 2]}
    # Two measured series still move apart, each a tenth of the gap, the bound stays.
    assert xs[1]['a'] == pytest.approx([0.9, 1.9]) and xs[1]['b'] == pytest.approx([1.1, 2.1])
    assert xs[1]['bound'] == [1, 2]
    from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
    pyplot.close(figure)


@needs_matplotlib
def test_the_caption_is_drawn_under_the_figure(tmp_path):
    from PIL import Image  # pylint: disable=g-import-not-at-top
    _draw(tmp_path / 'plain.png')
    _draw(tmp_path / 'captioned.png', caption='AMD EPYC, 2 cores; 2026-11-22; commit abc1234')
    with Image.open(tmp_path / 'plain.png') as plain:
        with Image.open(tmp_path / 'captioned.png') as captioned:
            assert captioned.size[1] > plain.size[1] + 10  # a line of 7 pt text more
            assert abs(captioned.size[0] - plain.size[0]) <= 2


def test_spread_text():
    assert plots.spread_text(3) == 'median and min-max of 3 repeats'
    assert plots.spread_text(10, 'runs') == 'median and min-max of 10 runs'
    assert plots.spread_text(1) == 'one run'
    # Lines of a figure that summarise different counts: their range, not the first's.
    assert plots.spread_text([6, 3, 6]) == 'median and min-max of 3-6 repeats'
    assert plots.spread_text([3, 3]) == 'median and min-max of 3 repeats'


def test_the_caption_names_machine_date_and_commit(tmp_path):
    assert provenance.caption('2026-11-22', 'Xeon, 8 cores, Linux x86_64', 'abc1234') == (
        'Xeon, 8 cores, Linux x86_64; 2026-11-22; commit abc1234')
    assert provenance.caption('2026-11-22', 'm', '') == 'm; 2026-11-22'  # no commit known
    # Runs of one machine and date share their caption; their commits are listed.
    assert provenance.join(['m; 2026-11-26; commit abc', 'm; 2026-11-26; commit def (again)',
                            'n; 2026-11-27; commit abc', 'm; 2026-11-26; commit abc', 'o; d']) == (
        'm; 2026-11-26; commits abc, def (again) / n; 2026-11-27; commit abc / o; d')
    cpuinfo = tmp_path / 'cpuinfo'
    cpuinfo.write_text('processor\t: 0\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n')
    assert provenance.cpu_model(str(cpuinfo)) == 'Intel(R) Xeon(R) CPU @ 2.20GHz'
    assert provenance.commit(str(tmp_path)) is None  # not a checkout


def test_figure_data_is_a_header_naming_the_run_then_a_line_per_point(tmp_path, monkeypatch):
    stamp = provenance.stamp()
    assert set(stamp) == {'machine', 'date', 'commit', 'command'}
    assert stamp['machine'] == provenance.machine() and stamp['command'].startswith('python ')
    # A study run as a module is named as one would type it, its arguments quoted.
    main = types.ModuleType('__main__')
    main.__spec__ = types.SimpleNamespace(name='experiments.chaos')
    monkeypatch.setitem(sys.modules, '__main__', main)
    assert provenance.run_command(['/x/experiments/chaos.py', '--kinds=kill', '--note=a b']) == (
        "python -m experiments.chaos --kinds=kill '--note=a b'")
    path = tmp_path / 'data' / 'tiny.jsonl'
    path.parent.mkdir()
    path.write_text('an older run\n')  # replaced, not appended to
    provenance.write_figure_data(str(path), dict(kind='loss', **stamp),
                                 [{'step': 1, 'loss': 2.0}, {'step': 2, 'loss': 1.5}])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert lines[0] == dict(figure='tiny', kind='loss', **stamp)
    assert lines[1:] == [{'step': 1, 'loss': 2.0}, {'step': 2, 'loss': 1.5}]


def test_the_commit_is_the_checkouts_head_marked_where_a_tracked_file_changed(tmp_path):
    def git(*args):
        return subprocess.run(['git', '-c', 'user.name=t', '-c', 'user.email=t@t'] + list(args),
                              cwd=tmp_path, capture_output=True, text=True,
                              check=True).stdout.strip()
    try:
        git('init', '-q')
    except (OSError, subprocess.CalledProcessError):
        pytest.skip('no git')
    (tmp_path / 'a.py').write_text('x = 1\n')
    git('add', 'a.py')
    git('commit', '-qm', 'first')
    head = git('rev-parse', '--short', 'HEAD')
    (tmp_path / 'notes.txt').write_text('untracked\n')  # not part of what was measured
    assert provenance.commit(str(tmp_path)) == head and len(head) >= 7
    (tmp_path / 'a.py').write_text('x = 2\n')
    assert provenance.commit(str(tmp_path)) == head + '-dirty'


@needs_matplotlib
def test_a_resumed_loss_curve_draws_each_attempt_and_the_steps_redone_up_close(monkeypatch,
                                                                              tmp_path):
    attempts = [(1, [(s, 2.0 - 0.01 * s) for s in range(1, 38)]),
                (3, [(s, 2.0 - 0.01 * s) for s in range(31, 66)])]
    restarts = [{'attempt': 1, 'reached_step': 37, 'resumed_step': 30},
                {'attempt': 2, 'reached_step': None, 'resumed_step': 30}]
    figure, legend = _drawn(monkeypatch, lambda: chaos_loss.draw(
        str(tmp_path / 'loss.png'), attempts, restarts, smooth=1))
    whole, close = figure.axes
    labelled = [line for line in whole.get_lines() if line.get_label().startswith('attempt')]
    assert [line.get_label() for line in labelled] == ['attempt 1', 'attempt 3']
    # The third attempt starts at the checkpoint's step, on the first one's curve: no jump.
    assert labelled[1].get_xdata()[0] == 31
    assert labelled[1].get_ydata()[0] == pytest.approx(2.0 - 0.31)
    # Up close: the failed attempt and the one that resumed, over the 7 steps redone, shaded.
    span, = close.patches
    assert (span.get_x(), span.get_x() + span.get_width()) == (30, 37)
    assert [line.get_label() for line in close.get_lines() if line.get_label()[0] != '_'] == [
        'close up: attempt 1 (failed)', 'close up: attempt 3 (resumed)']
    assert close.get_title() == 'attempt 1 failed at step 37;\nthe next resumed from 30'
    assert [t.get_text() for t in legend.get_texts()] == [
        'attempt 1', 'attempt 3', 'resumed from a checkpoint, steps redone',
        'close up: attempt 1 (failed)', 'close up: attempt 3 (resumed)',
        'close up: the 7 steps redone']
    from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
    pyplot.close(figure)

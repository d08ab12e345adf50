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
from experiments.figures import kept
from experiments.figures import prediction
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


def test_every_figure_is_used_and_drawn_from_data_or_says_why_not():
    figures = _figures_in_img()
    with_data = set(kept.names())
    assert len(with_data) >= 30
    assert not set(figures) - _referenced(), 'docs/img files no page uses'
    assert not set(figures) - with_data - set(kept.FIGURES_WITHOUT_DATA), (
        'figures with neither data nor a reason')
    assert not with_data - set(figures), 'data of figures not in docs/img'
    # A figure given data leaves the list of those without.
    assert not with_data & set(kept.FIGURES_WITHOUT_DATA)
    assert set(kept.FIGURES_WITHOUT_DATA) <= set(figures)
    for name in with_data:
        assert figures[name] == {'png', 'svg'}, name


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
    files = kept.draw(name, '/nowhere', formats=('svg',))
    assert files == ['/nowhere/%s.svg' % name] and drawn['path'] == files[0]
    assert drawn['kind'] == header['kind']
    # The caption is where the numbers were measured, not where they are drawn.
    assert drawn['kwargs']['caption'] == '%s; %s; commit %s' % (
        header['machine'], header['date'], header['commit'])
    # The table the numbers come from: a heading of a results page.
    page, _, heading = header['source'].partition('#')
    assert page.startswith('docs/results/') and heading in docs_test.anchors(page), page
    assert header['command'].startswith('python -m ')
    # Every point of the data is drawn, in its series.
    if header['kind'] == 'lines':
        medians = [s['median'] for _, series, _ in drawn['args'][0] for entry in series
                   for s in entry[2]]
    elif header['kind'] == 'bars':
        medians = [s['median'] for _, _, _, series in drawn['args'][0] for _, summaries in series
                   for s in summaries if s is not None]
    else:
        medians = [s['median'] for _, measured, _ in drawn['args'][0] for s in measured]
    assert sorted(medians) == sorted(p['median'] for p in points)
    for p in points:
        assert p['min'] <= p['median'] <= p['max'], (name, p)


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

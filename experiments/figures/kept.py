"""docs/img's figures, each drawn from the data kept in docs/results/data/NAME.jsonl.

A figure's file is JSON lines. The first line says how to draw it and where its numbers come
from; every other line is one point:

  {"figure": NAME, "kind", "title", "machine", "date", "commit" (the caption: where and
   when the numbers were measured), "command" (what measured them), "source" (the section of
   docs/ that shows them: a table of docs/results/ for summaries), "note" (optional: the
   caption's first words, e.g. that timings are illustrative), and what the kind reads}
  lines:     {"panel", "series", "x", "median", "min", "max"}, "computed": true for a bound
             drawn beside the measurements (dashed, not dodged); the header's "xlabel",
             "ylabel", "logx", "logy", "sharey" (optional)
  bars:      {"panel", "series", "x" (the group), "median", "min", "max"}; the header's
             "panel_ylabels" {panel: y label} where panels differ
  predicted: {"series", "median", "min", "max" (measured), "predicted"}
  timeline:  one per op of a traced step, {"panel", "row", "start_ms", "end_ms"}; the header's
             "rows", "panel_titles", "marks" (`traced_step`)
  accuracy:  one per checkpoint, {"series", "repeat", "step", "images", "seconds",
             "accuracy"}; the header's "target" (`accuracy`)
  loss:      one per logged step, {"attempt", "step", "loss"}; the header's "restarts"
             (`chaos_loss`)
  stages:    {"device", "stage", "self_ms"} and {"run", "step_ms"} (`tfhp.profiling.stage_figure`)

Panels, series and groups are drawn in the order they first appear. The numbers of lines, bars
and predicted are those of the study's tables; where a study kept its own JSON lines, the figure
would be drawn from them (`--replot` of each study). Those of the other kinds no table holds (a
traced step's ops, every checkpoint of every repeat, every step of every attempt, a traced
step's stages): the study wrote them with --figure_data (`tfhp.provenance.write_figure_data`,
its header naming the run), and its --plot draws the same points (`draw_data`).
"""
import collections
import json
import os

from experiments.figures import accuracy
from experiments.figures import chaos_loss
from experiments.figures import prediction
from experiments.figures import traced_step
from tfhp import plots
from tfhp import provenance
from tfhp.profiling import stage_figure

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA_DIR = os.path.join(ROOT, 'docs', 'results', 'data')
IMG_DIR = os.path.join(ROOT, 'docs', 'img')


def names():
    """The figures with data kept, sorted."""
    return sorted(f[:-len('.jsonl')] for f in os.listdir(DATA_DIR) if f.endswith('.jsonl'))


def load(name, data_dir=None):
    """(header, points) of figure `name` (in `data_dir`, default DATA_DIR); ValueError naming
    the file where it is malformed."""
    path = os.path.join(data_dir or DATA_DIR, name + '.jsonl')
    with open(path) as f:
        lines = [line for line in f if line.strip()]
    try:
        records = [json.loads(line) for line in lines]
    except ValueError as e:
        raise ValueError('%s: not JSON lines: %s' % (path, e)) from e
    if not records or records[0].get('figure') != name:
        raise ValueError('%s: the first line must be the header {"figure": "%s", ...}'
                         % (path, name))
    return records[0], records[1:]


def caption(header):
    """The figure's caption: its header's note, if any, then the machine, date and commit its
    numbers were measured on."""
    line = provenance.caption(header['date'], header['machine'], header['commit'])
    return '%s; %s' % (header['note'], line) if header.get('note') else line


def _ordered(values):
    return list(collections.OrderedDict.fromkeys(values))


def _summary(point):
    return {k: point[k] for k in ('median', 'min', 'max')}


def _lines(path, header, points, caption_text):
    panels = []
    for panel in _ordered(p['panel'] for p in points):
        series = []
        for label in _ordered(p['series'] for p in points if p['panel'] == panel):
            mine = [p for p in points if p['panel'] == panel and p['series'] == label]
            entry = (label, [p['x'] for p in mine], [_summary(p) for p in mine])
            if mine[0].get('computed'):
                entry += ({'linestyle': '--', 'marker': '', 'capsize': 0, 'dodge': False},)
            series.append(entry)
        panels.append((panel, series, []))
    plots.line_panels(path, panels, header['xlabel'], header['ylabel'],
                      logx=header.get('logx', False), logy=header.get('logy', False),
                      title=header['title'], sharey=header.get('sharey', False),
                      caption=caption_text)


def _bars(path, header, points, caption_text):
    panels = []
    for panel in _ordered(p['panel'] for p in points):
        mine = [p for p in points if p['panel'] == panel]
        groups = _ordered(p['x'] for p in mine)
        series = []
        for label in _ordered(p['series'] for p in mine):
            by_group = {p['x']: _summary(p) for p in mine if p['series'] == label}
            series.append((label, [by_group.get(g) for g in groups]))
        ylabel = header.get('panel_ylabels', {}).get(panel, header['ylabel'])
        panels.append((panel, ylabel, groups, series))
    plots.bar_panels(path, panels, title=header['title'], caption=caption_text)


def _predicted(path, header, points, caption_text):
    series = []
    for label in _ordered(p['series'] for p in points):
        mine = [p for p in points if p['series'] == label]
        series.append((label, [_summary(p) for p in mine], [p['predicted'] for p in mine]))
    prediction.draw(path, series, title=header['title'], caption=caption_text)


# kind -> draw(path, header, points, caption)
KINDS = {'lines': _lines, 'bars': _bars, 'predicted': _predicted,
         'timeline': traced_step.draw_data, 'accuracy': accuracy.draw_data,
         'loss': chaos_loss.draw_data, 'stages': stage_figure.draw_data}


def draw_data(path, header, points):
    """Draws one figure from its header and points at `path` (a kept file's, or a study's own
    for --plot: the same figure), captioned with where they were measured."""
    if header.get('kind') not in KINDS:
        raise ValueError('%s.jsonl: kind %r, not one of %s'
                         % (header.get('figure'), header.get('kind'), sorted(KINDS)))
    KINDS[header['kind']](path, header, points, caption(header))


def draw(name, out_dir=IMG_DIR, formats=('png', 'svg'), data_dir=None):
    """Draws figure `name` from its data (in `data_dir`, default DATA_DIR) into `out_dir`, one
    file per format; returns the files."""
    header, points = load(name, data_dir)
    files = []
    for suffix in formats:
        path = os.path.join(out_dir, '%s.%s' % (name, suffix))
        draw_data(path, header, points)
        files.append(path)
    return files

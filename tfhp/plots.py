"""Figures for a paper draft: what the experiments' and the commands' figures share.

matplotlib is optional (the extra `tfhp[plots]`): nothing here imports it until a figure is
drawn, so tfhp imports and runs without it, and `check_available` lets an entry point refuse
--plot before any work. Figures are drawn with the Agg backend (no display needed).

The path's suffix picks the format: .svg and .pdf are vector files, anything else a PNG of
`dpi` dots per inch (a palette PNG: a few tens of KB). Every figure takes an optional `caption`,
a line drawn under it (`tfhp.provenance.caption()`: machine, date, commit). Series keep one
colour and one marker (open, so that points of series that coincide stay visible) across a
figure's panels, and their legend sits below the panels, clear of the data.

Repeated figures come as summaries, dicts with 'median', 'min' and 'max' (see
experiments/stats.py): lines are drawn through the medians, with the min-max range as error bars
or a shaded band. A None median or bound (a target not reached) is left out of the line.

The shared figures and the pieces a study's own figure draws with:

  line_panels       y vs x with min-max error bars, one panel per group, optional reference lines
  bar_panels        grouped bars of medians with min-max error bars, one panel per figure
  step_timelines    traced steps as Gantt charts, one panel each on one time axis
  spread_text       'median and min-max of N repeats', or 'one run' (for titles)
  load_pyplot, styled, legend_below, save, timeline_rows, save_timelines, PANEL, MARKERS,
  LINESTYLES, HATCHES: the backend, text sizes, legend, caption and file format every figure
  shares.

A figure of one study lives with it: experiments/figures/ (accuracy curves, a recovered job's
loss, predicted against measured, each worker's phases, traced steps' timelines) and
tfhp/profiling/stage_figure.py (the diagnose report's stage breakdown).
"""
import functools
import io
import math
import os
import textwrap

INSTALL_HINT = "--plot needs matplotlib, which is not installed: pip install -e '.[plots]'"
DPI = 150  # a PNG's resolution; vector formats ignore it
VECTOR_FORMATS = ('svg', 'pdf')
# What tells series apart besides colour (and in grey print): a marker each; the accuracy
# curves, whose many points run together, also a linestyle each; bars a hatch each.
MARKERS = 'osD^v<>ph*'
LINESTYLES = ('-', '--', '-.', ':')
HATCHES = ('', '//', '..', 'xx', '\\\\', '++', 'oo')
# Sizes for a figure printed about as wide as a page: 9 pt text at a panel width of 4.4 in.
_STYLE = {'font.size': 9, 'axes.titlesize': 9, 'axes.labelsize': 9, 'legend.fontsize': 8,
          'xtick.labelsize': 8, 'ytick.labelsize': 8, 'figure.titlesize': 9.5,
          'legend.frameon': False, 'svg.hashsalt': 'tfhp'}  # ids in an SVG: the same each time
PANEL = (4.4, 3.3)  # inches per panel


class PlotsUnavailable(ImportError):
    """matplotlib is not installed; the message says how to install it."""


def load_pyplot():
    """matplotlib's pyplot on the Agg backend; PlotsUnavailable where it is not installed."""
    try:
        import matplotlib  # pylint: disable=g-import-not-at-top
    except ImportError as e:
        raise PlotsUnavailable(INSTALL_HINT) from e
    matplotlib.use('Agg')
    from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
    return pyplot


def check_available():
    """Raises PlotsUnavailable (with the install hint) when matplotlib cannot be imported."""
    load_pyplot()


def output_format(path):
    """'svg' or 'pdf' for a path ending so (any case), else 'png'."""
    suffix = path.rpartition('.')[2].lower() if '.' in path else ''
    return suffix if suffix in VECTOR_FORMATS else 'png'


def draw_with_svg(plot_one, path):
    """Draws a figure with plot_one(file) at `path` and, unless `path` is an SVG already, as an
    SVG beside it; returns the files written. Every figure tfhp draws for a reader gets its
    vector twin this way."""
    svg = os.path.splitext(path)[0] + '.svg'
    files = (path,) if svg == path else (path, svg)
    for out in files:
        plot_one(out)
    return files


def spread_text(count, noun='repeats'):
    """How a figure's lines and bars summarise `count` runs: 'median and min-max of 3 repeats',
    or 'one run' (no spread to draw); `count` may be every line's count, drawn as their range
    where they differ ('of 3-6 repeats')."""
    counts = sorted(set(count if isinstance(count, (list, tuple, set)) else [count]))
    if counts[-1] <= 1:
        return 'one run'
    told = '%d' % counts[0] if len(counts) == 1 else '%d-%d' % (counts[0], counts[-1])
    return 'median and min-max of %s %s' % (told, noun)


def styled(draw):
    """A decorator: draws in this module's text sizes without changing the caller's matplotlib
    settings."""
    @functools.wraps(draw)
    def styled(*args, **kwargs):
        with load_pyplot().rc_context(_STYLE):
            return draw(*args, **kwargs)
    return styled


def legend_below(figure, axes, title=None, order=()):
    """One legend for the figure, under its panels: each label once, those of `order` first
    (in that order), then the rest as they appear; as many to a row as the width holds."""
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if not entries:
        return None
    labels = [label for label in order if label in entries]
    labels += [label for label in entries if label not in order]
    # An entry takes its text (about 0.065 in a character at 8 pt) and its key, 0.6 in.
    entry_width = 0.6 + 0.065 * max(len(label) for label in labels)
    columns = max(1, min(len(labels), int(figure.get_figwidth() / entry_width)))
    return figure.legend([entries[label] for label in labels], labels, loc='upper center',
                         bbox_to_anchor=(0.5, 0.0), ncol=columns, title=title)


def save(figure, path, dpi, caption, legend=None):
    """Writes the figure in the format its path asks for; the caption goes under everything.

    The saved area is the drawing's tight bounding box, so a legend or caption below the
    figure is included rather than clipped.
    """
    pyplot = load_pyplot()
    if caption:
        bottom = 0.0
        if legend is not None:
            figure.canvas.draw()  # the legend's size is known once it is drawn
            bottom = legend.get_window_extent().transformed(
                figure.transFigure.inverted()).y0
        # Wrapped to the figure's width (about 17 characters an inch at 7 points), so that a
        # long caption does not widen the saved area and shrink the drawing.
        figure.text(0.5, bottom - 0.01, textwrap.fill(caption, int(17 * figure.get_figwidth())),
                    ha='center', va='top', fontsize=7, color='dimgrey')
    kind = output_format(path)
    options = dict(bbox_inches='tight', pad_inches=0.05)
    if kind in VECTOR_FORMATS:
        # No creation date in the file: the same figure gives the same bytes.
        figure.savefig(path, format=kind, metadata={'svg': {'Date': None},
                                                    'pdf': {'CreationDate': None}}[kind],
                       **options)
        pyplot.close(figure)
        return
    buffer = io.BytesIO()
    figure.savefig(buffer, format='png', dpi=dpi, **options)
    pyplot.close(figure)
    from PIL import Image  # pylint: disable=g-import-not-at-top  # matplotlib depends on it
    buffer.seek(0)
    with Image.open(buffer) as image:
        image.convert('RGB').quantize(colors=96).save(path, format='PNG', optimize=True,
                                                      dpi=(dpi, dpi))


def _present(xs, summaries):
    return [(x, s) for x, s in zip(xs, summaries) if s is not None and s['median'] is not None]


def _dodged(xs, index, count, logx):
    """xs shifted a little per series, so that error bars at the same x do not hide each other.

    The series spread over a fifth of the smallest gap between neighbouring xs (in log space
    on a log axis), centred on the true x.
    """
    ordered = sorted(set(xs))
    if count < 2 or len(ordered) < 2:
        return xs
    space = [math.log(x) for x in ordered] if logx else ordered
    gap = min(b - a for a, b in zip(space, space[1:]))
    shift = 0.2 * gap * (index / (count - 1.0) - 0.5)
    return [x * math.exp(shift) if logx else x + shift for x in xs]


@styled
def line_panels(path, panels, xlabel, ylabel, logx=False, logy=False, title=None,
                xticks=None, sharey=False, dpi=DPI, caption=None):
    """One panel per group: a line per series through the medians, min-max error bars.

    Args:
      path: the file to write (.svg, .pdf, else PNG).
      panels: [(panel title, series, reference lines)] or (..., reference lines, y label);
        series: [(label, xs, summaries)] or (label, xs, summaries, style): style is a dict of
        matplotlib line options (e.g. {'color': 'C0', 'linestyle': '--'} for a bound drawn
        beside the measured series), and 'dodge': False keeps its xs where they are (a
        computed line, not a measurement among others at the same x); reference lines:
        [(y, label)] drawn dashed across the panel (e.g. memcpy bandwidth). A label keeps
        one colour and marker in every panel.
      xlabel, ylabel: axis labels, with units (a panel's own y label wins).
      logx, logy: log scales (for x or y spanning decades); a linear y starts at 0.
      title: the figure's title.
      xticks: [(x, label)] to mark, e.g. sizes as '1 KiB'.
      sharey: one y axis for every panel (same figure, same scale: panels compare).
      dpi: a PNG's resolution.
      caption: a line under the figure (e.g. `tfhp.provenance.caption()`).
    """
    pyplot = load_pyplot()
    from matplotlib import ticker  # pylint: disable=g-import-not-at-top
    figure, axes = pyplot.subplots(1, len(panels), squeeze=False, sharey=sharey,
                                   figsize=(PANEL[0] * len(panels) + 0.6, PANEL[1]))
    labels = []
    for panel in panels:
        labels += [s[0] for s in panel[1] if s[0] not in labels]
    for ax, panel in zip(axes[0], panels):
        panel_title, series, references = panel[:3]
        # Only the series that are dodged share the spread: the computed lines stay put.
        dodged = [i for i, s in enumerate(series) if (s[3] if len(s) > 3 else {}).get('dodge',
                                                                                     True)]
        for index, (label, xs, summaries) in enumerate(s[:3] for s in series):
            points = _present(xs, summaries)
            if not points:
                continue
            k = labels.index(label)
            style = dict(color='C%d' % (k % 10), marker=MARKERS[k % len(MARKERS)],
                         markersize=5, markerfacecolor='none', capsize=3)
            style.update(series[index][3] if len(series[index]) > 3 else {})
            xs = [x for x, _ in points]
            if style.pop('dodge', True):
                xs = _dodged(xs, dodged.index(index), len(dodged), logx)
            medians = [s['median'] for _, s in points]
            below = [s['median'] - s['min'] for _, s in points]
            above = [0.0 if s['max'] is None else s['max'] - s['median'] for _, s in points]
            ax.errorbar(xs, medians, yerr=[below, above], label=label, **style)
        for y, label in references:
            ax.axhline(y, color='black', linestyle='--', linewidth=1, label=label)
        ax.set_xscale('log' if logx else 'linear')
        ax.set_yscale('log' if logy else 'linear')
        if logy:  # numbers at 1, 2, 5 x 10^k read better than powers of ten alone
            ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: '%g' % v))
            ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        else:
            ax.set_ylim(bottom=0)
        if xticks:
            ax.set_xticks([x for x, _ in xticks])
            ax.set_xticklabels([t for _, t in xticks], rotation=45 if len(xticks) > 5 else 0)
            ax.minorticks_off()
        ax.set_title(panel_title)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(panel[3] if len(panel) > 3 else ylabel)
        ax.grid(alpha=0.3, which='both')
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    save(figure, path, dpi, caption, legend_below(figure, axes[0], order=labels))


@styled
def bar_panels(path, panels, title=None, dpi=DPI, caption=None):
    """One panel per figure: groups of bars (a bar per series), medians, min-max error bars.

    Args:
      path: the file to write (.svg, .pdf, else PNG).
      panels: [(panel title, y label, groups, series)]; groups: the x labels; series:
        [(label, summaries)], one summary (or None: no bar) per group. A series has a colour
        and a hatch of its own (told apart in grey print too).
      title: the figure's title.
      dpi: a PNG's resolution.
      caption: a line under the figure (e.g. `tfhp.provenance.caption()`).
    """
    pyplot = load_pyplot()
    figure, axes = pyplot.subplots(1, len(panels), squeeze=False,
                                   figsize=(PANEL[0] * len(panels) + 0.6, PANEL[1]))
    labels = []
    for panel in panels:
        labels += [label for label, _ in panel[3] if label not in labels]
    for ax, (panel_title, ylabel, groups, series) in zip(axes[0], panels):
        width = 0.8 / max(1, len(series))
        for index, (label, summaries) in enumerate(series):
            bars = [(g, s) for g, s in enumerate(summaries)
                    if s is not None and s['median'] is not None]
            if not bars:
                continue
            xs = [g - 0.4 + width * (index + 0.5) for g, _ in bars]
            medians = [s['median'] for _, s in bars]
            errors = [[s['median'] - s['min'] for _, s in bars],
                      [0.0 if s['max'] is None else s['max'] - s['median'] for _, s in bars]]
            ax.bar(xs, medians, width=width * 0.95, yerr=errors, capsize=3, label=label,
                   color='C%d' % (labels.index(label) % 10),
                   hatch=HATCHES[labels.index(label) % len(HATCHES)],
                   edgecolor='white', linewidth=0)
        ax.set_xticks(range(len(groups)))
        ax.set_xticklabels(groups)
        ax.set_ylim(bottom=0)
        ax.set_title(panel_title)
        ax.set_ylabel(ylabel)
        ax.grid(alpha=0.3, axis='y')
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    save(figure, path, dpi, caption, legend_below(figure, axes[0]))


@styled
def step_timelines(path, panels, rows, marks=None, title=None, dpi=DPI, caption=None):
    """Traced steps as timelines (Gantt charts), one panel each, stacked on one time axis: a
    bar per op interval on its row, a row per kind of op (`tfhp.profiling.timeline.rows`);
    ops of a row that ran at once (several buckets' all-reduces) are drawn in thinner lanes,
    one above the other.

    Args:
      path: the file to write (.svg, .pdf, else PNG).
      panels: [(panel title, {row: [(start_ms, end_ms), ...]})], drawn top to bottom.
      rows: the row names, top to bottom; each keeps its colour in every panel.
      marks: {label: [x_ms or None, one per panel]}: a dashed vertical line in each panel
        (None: not in that panel), one style per label, named in the legend.
      title, dpi, caption: the figure's title, a PNG's resolution, a line under the figure.
    """
    pyplot = load_pyplot()
    figure, axes = pyplot.subplots(len(panels), 1, sharex=True, squeeze=False,
                                   figsize=(2 * PANEL[0], 0.45 * len(rows) * len(panels) + 1.2))
    axes = [ax for (ax,) in axes]
    colours = {row: 'C%d' % (index % 10) for index, row in enumerate(rows)}
    for p, (ax, (panel_title, by_row)) in enumerate(zip(axes, panels)):
        for y, row in enumerate(rows):
            lanes = _lanes(by_row.get(row, ()))
            height = 0.7 / max(1, len(lanes))
            for index, lane in enumerate(lanes):
                # A thin white edge tells apart ops that follow each other without a gap.
                ax.broken_barh([(start, end - start) for start, end in lane],
                               (y - 0.35 + index * height, height), facecolors=colours[row],
                               edgecolors='white', linewidth=0.3,
                               label=row if index == 0 else None)
        timeline_rows(ax, rows, panel_title, [xs[p] for xs in (marks or {}).values()],
                       list(marks or {}))
    save_timelines(figure, axes, 'time since the step\'s first op, ms', title, path, dpi,
                    caption, rows)


def timeline_rows(ax, labels, panel_title, mark_xs, mark_labels, fontsize=None):
    """A timeline panel's rows (top to bottom), title, grid and dashed marks (x None: none)."""
    for index, (label, x) in enumerate(zip(mark_labels, mark_xs)):
        if x is not None:
            ax.axvline(x, color='black', linestyle=LINESTYLES[1 + index % 3], linewidth=1.0,
                       label=label)
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels(labels, fontsize=fontsize)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_title(panel_title, loc='left')
    ax.grid(alpha=0.3, axis='x')


def save_timelines(figure, axes, xlabel, title, path, dpi, caption, order):
    """Stacked timeline panels: the shared time axis, the title, the legend below, saved."""
    axes[-1].set_xlabel(xlabel)
    axes[-1].set_xlim(left=0)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    save(figure, path, dpi, caption, legend_below(figure, axes, order=order))


def _lanes(spans):
    """Spans (start, end) dealt to lanes so that none overlaps another in its lane: each to
    the first lane free by its start (ops that ran at once are drawn one above the other)."""
    lanes = []
    for start, end in sorted(spans):
        lane = next((lane for lane in lanes if lane[-1][1] <= start), None)
        if lane is None:
            lane = []
            lanes.append(lane)
        lane.append((start, end))
    return lanes

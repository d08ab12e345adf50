"""Figures for a paper draft: the experiments' curves and `python -m tfhp.diagnose --plot`.

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

  accuracy_curves   accuracy vs images and vs seconds, a median line and a band per series
  line_panels       y vs x with min-max error bars, one panel per group, optional reference lines
  bar_panels        grouped bars of medians with min-max error bars, one panel per figure
  stage_breakdown   the diagnose report: self time per stage and device, step time per run
  step_timelines    traced steps as Gantt charts, one panel each on one time axis
  predicted_vs_measured   a model's predictions against measurements, the y = x line and a band
  resumed_loss_curve   a recovered job's loss by global step, a line per attempt, redone steps
  spread_text       'median and min-max of N repeats', or 'one run' (for titles)
"""
import functools
import io
import math
import os
import statistics
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
_PANEL = (4.4, 3.3)  # inches per panel


class PlotsUnavailable(ImportError):
    """matplotlib is not installed; the message says how to install it."""


def _pyplot():
    try:
        import matplotlib  # pylint: disable=g-import-not-at-top
    except ImportError as e:
        raise PlotsUnavailable(INSTALL_HINT) from e
    matplotlib.use('Agg')
    from matplotlib import pyplot  # pylint: disable=g-import-not-at-top
    return pyplot


def check_available():
    """Raises PlotsUnavailable (with the install hint) when matplotlib cannot be imported."""
    _pyplot()


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


def _styled(draw):
    """Draws in this module's text sizes without changing the caller's matplotlib settings."""
    @functools.wraps(draw)
    def styled(*args, **kwargs):
        with _pyplot().rc_context(_STYLE):
            return draw(*args, **kwargs)
    return styled


def _legend_below(figure, axes, title=None, order=()):
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


def _save(figure, path, dpi, caption, legend=None):
    """Writes the figure in the format its path asks for; the caption goes under everything.

    The saved area is the drawing's tight bounding box, so a legend or caption below the
    figure is included rather than clipped.
    """
    pyplot = _pyplot()
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


@_styled
def resumed_loss_curve(path, attempts, restarts, smooth=10, title=None, dpi=DPI, caption=None):
    """A recovered job's loss against the global step, attempt by attempt (left), and the
    restart that redid the most steps up close (right): a resumed attempt continues where its
    checkpoint left the loss, over the steps it redoes.

    Args:
      path: the file to write (.svg, .pdf, else PNG).
      attempts: [(attempt number, [(global_step, loss)])] of the attempts that took a step
        (the chief's progress log, `tfhp.launcher.progress_log`).
      restarts: the recovery's fault records ('attempt', 'reached_step', 'resumed_step').
      smooth: the left panel's lines are running means over this many steps (raw losses, one
        batch each, drawn faint beneath); the close-up draws every step.
      title, dpi, caption: as `accuracy_curves`'.
    """
    pyplot = _pyplot()
    figure, (whole, close) = pyplot.subplots(
        1, 2, figsize=(2 * _PANEL[0] + 0.6, _PANEL[1]), gridspec_kw={'width_ratios': [2, 1]})
    # Two colours taking turns tell neighbouring attempts apart however many there are.
    colours = ('tab:blue', 'tab:orange')
    for index, (number, run) in enumerate(attempts):
        steps, losses = [s for s, _ in run], [l for _, l in run]
        means = _running_mean(losses, smooth)
        colour = colours[index % 2]
        label = None
        if len(attempts) <= 2:
            label = 'attempt %d' % number
        elif index == 0:
            label = 'attempts %d-%d (colours take turns)' % (number, attempts[-1][0])
        whole.plot(steps, means, color=colour, linewidth=1.0, label=label)
        whole.plot(steps, losses, color=colour, linewidth=0.4, alpha=0.2)
    redone = [f for f in restarts if f.get('reached_step') is not None and
              f['reached_step'] > f['resumed_step']]
    for index, fault in enumerate(redone):
        whole.axvline(fault['resumed_step'], color='tab:red', linewidth=0.6, alpha=0.6,
                      label='resumed from a checkpoint, steps redone' if index == 0 else None)
    whole.set_xlabel('global step')
    whole.set_ylabel('training loss (running mean of %d steps)' % smooth)
    if redone:
        _restart_close_up(close, attempts, max(
            redone, key=lambda f: f['reached_step'] - f['resumed_step']), smooth)
    else:
        close.set_axis_off()
    for ax in (whole, close):
        ax.grid(alpha=0.3)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    legend = _legend_below(figure, [whole, close])
    _save(figure, path, dpi, caption, legend)


def _running_mean(values, window):
    return [statistics.fmean(values[max(0, i - window + 1):i + 1]) for i in range(len(values))]


def _restart_close_up(ax, attempts, fault, smooth):
    """The failed attempt and the one that resumed after it, around the steps redone: each
    step's loss as a point, the running mean as a line."""
    redone = fault['reached_step'] - fault['resumed_step']
    low, high = fault['resumed_step'] - 3 * redone, fault['reached_step'] + 3 * redone
    later = [(n, run) for n, run in attempts if n > fault['attempt']]
    pair = [(n, run) for n, run in attempts if n == fault['attempt']] + later[:1]
    for (number, run), colour, marker, role in zip(
            pair, ('tab:blue', 'tab:orange'), MARKERS, ('failed', 'resumed')):
        means = _running_mean([l for _, l in run], smooth)
        shown = [(s, l, m) for (s, l), m in zip(run, means) if low <= s <= high]
        ax.plot([s for s, _, _ in shown], [l for _, l, _ in shown], linestyle='none',
                marker=marker, markersize=2.5, color=colour, alpha=0.45)
        ax.plot([s for s, _, _ in shown], [m for _, _, m in shown], color=colour,
                linewidth=1.4, label='close up: attempt %d (%s)' % (number, role))
    ax.axvspan(fault['resumed_step'], fault['reached_step'], color='tab:red', alpha=0.12,
               linewidth=0, label='close up: the %d steps redone' % redone)
    ax.set_title('attempt %d failed at step %d;\nthe next resumed from %d'
                 % (fault['attempt'], fault['reached_step'], fault['resumed_step']))
    ax.set_xlabel('global step')
    ax.set_ylabel('training loss (points: each step)')


@_styled
def accuracy_curves(path, series, target=None, title=None, dpi=DPI, caption=None):
    """Accuracy vs images (left) and vs seconds (right), median line and min-max band each.

    Args:
      path: the file to write (.svg, .pdf, else PNG).
      series: [(label, curves)]; curves: one per repeat, each a list of (images, seconds,
        accuracy) checkpoints. Repeats are aligned by checkpoint index (the shortest decides);
        x is the median over repeats of images, resp. seconds, at that checkpoint.
      target: draw the target accuracy as a dashed line.
      title: the figure's title.
      dpi: a PNG's resolution.
      caption: a line under the figure (e.g. `tfhp.provenance.caption()`).
    """
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(1, 2, figsize=(2 * _PANEL[0] + 0.6, _PANEL[1]), sharey=True)
    for index, (label, curves) in enumerate(series):
        length = min(len(c) for c in curves)
        columns = [[c[i] for c in curves] for i in range(length)]
        accuracy = [_median_band([p[2] for p in points]) for points in columns]
        for ax, x_index in zip(axes, (0, 1)):
            xs = [_median_band([p[x_index] for p in points])[0] for points in columns]
            # Curves cross and run together: a linestyle and a marker (every few
            # checkpoints) each, beside the colour.
            line, = ax.plot(xs, [a[0] for a in accuracy],
                            linestyle=LINESTYLES[index % len(LINESTYLES)],
                            marker=MARKERS[index % len(MARKERS)], markersize=4,
                            markerfacecolor='none', markevery=max(1, length // 8),
                            label='%s (%d repeats)' % (label, len(curves)))
            ax.fill_between(xs, [a[1] for a in accuracy], [a[2] for a in accuracy],
                            color=line.get_color(), alpha=0.18 if len(series) <= 4 else 0.09,
                            linewidth=0)
    axes[0].set_xlabel('images trained (updates applied x images per update)')
    axes[1].set_xlabel('training seconds (timed steps; median over the repeats)')
    axes[0].set_ylabel('validation top-1 accuracy')
    for ax in axes:
        if target is not None:
            ax.axhline(target, color='grey', linestyle='--', linewidth=1,
                       label='target %.2f' % target)
        ax.grid(alpha=0.3)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    legend = _legend_below(figure, axes, title='line: median, band: min-max')
    _save(figure, path, dpi, caption, legend)


def _median_band(values):
    return statistics.median(values), min(values), max(values)


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


@_styled
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
    pyplot = _pyplot()
    from matplotlib import ticker  # pylint: disable=g-import-not-at-top
    figure, axes = pyplot.subplots(1, len(panels), squeeze=False, sharey=sharey,
                                   figsize=(_PANEL[0] * len(panels) + 0.6, _PANEL[1]))
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
    _save(figure, path, dpi, caption, _legend_below(figure, axes[0], order=labels))


@_styled
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
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(1, len(panels), squeeze=False,
                                   figsize=(_PANEL[0] * len(panels) + 0.6, _PANEL[1]))
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
    _save(figure, path, dpi, caption, _legend_below(figure, axes[0]))


@_styled
def predicted_vs_measured(path, series, band=0.10, unit='ms', title=None, dpi=DPI,
                          caption=None):
    """Measured (x, median with min-max error bars) against predicted (y), log-log, one marker
    series per group, with the line y = x and the band of +-`band` around it: a point inside
    the band is predicted within that error.

    Args:
      path: the file to write (.svg, .pdf, else PNG).
      series: [(label, measured summaries, predicted values)]; each summary a dict with
        'median', 'min' and 'max' (or a number: one run).
      band: the relative error the band shows.
      unit: the unit of both axes.
      title: the figure's title.
      dpi: a PNG's resolution.
      caption: a line under the figure (e.g. `tfhp.provenance.caption()`).
    """
    pyplot = _pyplot()
    figure, ax = pyplot.subplots(figsize=(_PANEL[0], _PANEL[0]))
    everything = []
    for index, (label, measured, predicted) in enumerate(series):
        summaries = [m if isinstance(m, dict) else {'median': m, 'min': m, 'max': m}
                     for m in measured]
        xs = [m['median'] for m in summaries]
        ax.errorbar(xs, predicted, xerr=[[m['median'] - m['min'] for m in summaries],
                                         [m['max'] - m['median'] for m in summaries]],
                    linestyle='none', marker=MARKERS[index % len(MARKERS)], markersize=5,
                    markerfacecolor='none', capsize=2, label=label)
        everything += xs + list(predicted)
    low, high = min(everything) / 1.3, max(everything) * 1.3
    line = [low, high]
    ax.plot(line, line, color='black', linewidth=1, label='predicted = measured')
    ax.fill_between(line, [v * (1 - band) for v in line], [v * (1 + band) for v in line],
                    color='grey', alpha=0.2, label='within %d%%' % round(100 * band))
    from matplotlib import ticker  # pylint: disable=g-import-not-at-top
    ax.set_xscale('log')
    ax.set_yscale('log')
    # 1-2-5 ticks over up to 2.5 decades; over more their labels would run into each other.
    subs = (1.0, 2.0, 5.0) if high / low < 10 ** 2.5 else (1.0,)
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_locator(ticker.LogLocator(base=10, subs=subs))
        axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: '%g' % v))
        axis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlim(low, high)
    ax.set_ylim(low, high)
    ax.set_xlabel('measured (%s)' % unit)
    ax.set_ylabel('predicted (%s)' % unit)
    ax.grid(alpha=0.3, which='both')
    if title:
        ax.set_title(title)
    figure.tight_layout()
    _save(figure, path, dpi, caption, _legend_below(figure, [ax]))


@_styled
def stage_breakdown(path, diagnosis, dpi=DPI, caption=None):
    """The diagnose report: self time per stage on each device, and each run's step time.

    Args:
      path: the file to write (.svg, .pdf, else PNG).
      diagnosis: a `tfhp.profiling.bottleneck.Diagnosis`.
      dpi: a PNG's resolution.
      caption: a line under the figure (e.g. `tfhp.provenance.caption()`).
    """
    pyplot = _pyplot()
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(2 * _PANEL[0] + 1.4, _PANEL[1] + 0.4),
                                            gridspec_kw={'width_ratios': [3, 2]})
    devices = list(diagnosis.stage_ms)
    stages = []
    for per_stage in diagnosis.stage_ms.values():
        stages += [s for s in per_stage if s not in stages]
    starts = [0.0] * len(devices)
    for index, stage in enumerate(stages):
        widths = [diagnosis.stage_ms[d].get(stage, 0.0) for d in devices]
        left.barh(devices, widths, left=starts, label=stage, color='C%d' % (index % 10),
                  hatch=HATCHES[index % len(HATCHES)], edgecolor='white', linewidth=0)
        starts = [s + w for s, w in zip(starts, widths)]
    left.invert_yaxis()
    left.set_xlabel('self time in the traced step, ms (a bar adds up to the device\'s busy time)')
    left.set_title('time per stage and device (one traced step)')
    left.grid(alpha=0.3, axis='x')
    names = list(diagnosis.runs)
    step_ms = [diagnosis.runs[n]['step_time_ms']['p50'] for n in names]
    bars = right.barh(names, step_ms, color=['black'] + ['silver'] * (len(names) - 1))
    right.bar_label(bars, fmt='%.1f ms', fontsize=8, padding=3)
    right.invert_yaxis()
    right.set_xlabel('median step time, ms')
    right.set_title('the configuration (black) and its ablations')
    right.set_xlim(0, max(step_ms) * 1.25)
    figure.suptitle(_wrap(diagnosis.verdict, 120))
    figure.tight_layout()
    _save(figure, path, dpi, caption, _legend_below(figure, [left]))


@_styled
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
    pyplot = _pyplot()
    figure, axes = pyplot.subplots(len(panels), 1, sharex=True, squeeze=False,
                                   figsize=(2 * _PANEL[0], 0.45 * len(rows) * len(panels) + 1.2))
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
        _timeline_rows(ax, rows, panel_title, [xs[p] for xs in (marks or {}).values()],
                       list(marks or {}))
    _save_timelines(figure, axes, 'time since the step\'s first op, ms', title, path, dpi,
                    caption, rows)


def _timeline_rows(ax, labels, panel_title, mark_xs, mark_labels, fontsize=None):
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


def _save_timelines(figure, axes, xlabel, title, path, dpi, caption, order):
    """Stacked timeline panels: the shared time axis, the title, the legend below, saved."""
    axes[-1].set_xlabel(xlabel)
    axes[-1].set_xlim(left=0)
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    _save(figure, path, dpi, caption, _legend_below(figure, axes, order=order))


def worker_phases(path, panels, phases, marks=None, title=None, dpi=DPI, caption=None):
    """Each worker's phases in one step, a row per worker and a thin lane per phase, one panel
    per job on one time axis (`tfhp.profiling.worker_phases`).

    Args:
      path: the file to write (.svg, .pdf, else PNG).
      panels: [(panel title, [(worker label, {phase: [(start_ms, end_ms), ...]}), ...])], drawn
        top to bottom, the workers top to bottom in the order given; a phase's intervals are
        drawn as one broken bar.
      phases: the phase names, each a lane from the top of a row down, in one colour.
      marks: {label: [x_ms or None, one per panel]}: a dashed vertical line in each panel.
      title, dpi, caption: the figure's title, a PNG's resolution, a line under the figure.
    """
    pyplot = _pyplot()
    heights = [max(1, len(rows)) for _, rows in panels]
    figure, axes = pyplot.subplots(
        len(panels), 1, sharex=True, squeeze=False, gridspec_kw={'height_ratios': heights},
        figsize=(2 * _PANEL[0], 0.22 * sum(heights) + 0.9 * len(panels) + 0.6))
    axes = [ax for (ax,) in axes]
    lane = 0.8 / len(phases)
    for p, (ax, (panel_title, rows)) in enumerate(zip(axes, panels)):
        for y, (_, spans) in enumerate(rows):
            for index, phase in enumerate(phases):
                if spans.get(phase):
                    ax.broken_barh([(start, end - start) for start, end in spans[phase]],
                                   (y - 0.4 + index * lane, lane),
                                   facecolors='C%d' % index,
                                   label=phase if y == 0 else None)
        _timeline_rows(ax, [label for label, _ in rows], panel_title,
                       [xs[p] for xs in (marks or {}).values()], list(marks or {}), fontsize=7)
    _save_timelines(figure, axes, 'time since the first worker\'s first op, ms', title, path,
                    dpi, caption, phases)


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


def _wrap(text, width):
    lines, line = [], ''
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = '%s %s' % (line, word) if line else word
    return '\n'.join(lines + [line])

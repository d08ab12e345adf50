"""The figure of `python -m tfhp.diagnose`: the traced step's self time per stage on each
device, and each run's step time, under the verdict.

Drawn from points, as docs/results/data keeps them (experiments/figures/kept.py): one
{"device", "stage", "self_ms"} per stage a device ran, one {"run", "step_ms"} per run (the
configuration first, then its ablations); the header's "title" is the verdict.
"""
import textwrap

from tfhp import plots


def points(diagnosis):
    """The points of a `tfhp.profiling.bottleneck.Diagnosis`."""
    # Rounded to the trace's microseconds.
    stages = [{'device': device, 'stage': stage, 'self_ms': round(ms, 3)}
              for device, per_stage in diagnosis.stage_ms.items()
              for stage, ms in per_stage.items()]
    return stages + [{'run': name, 'step_ms': run['step_time_ms']['p50']}
                     for name, run in diagnosis.runs.items()]


@plots.styled
def draw_data(path, header, data, caption=None, dpi=plots.DPI):
    """Self time per stage on each device (left: a bar per device, a segment per stage, adding
    up to the device's busy time) and each run's median step time (right), the header's title
    (the verdict) above.

    Args:
      path: the file to write (.svg, .pdf, else PNG).
      header: the figure's header ("title").
      data: the points (`points`); devices, stages and runs in the order they first appear.
      caption: a line under the figure (e.g. `tfhp.provenance.caption()`).
      dpi: a PNG's resolution.
    """
    pyplot = plots.load_pyplot()
    figure, (left, right) = pyplot.subplots(
        1, 2, figsize=(2 * plots.PANEL[0] + 1.4, plots.PANEL[1] + 0.4),
        gridspec_kw={'width_ratios': [3, 2]})
    stage_points = [p for p in data if 'stage' in p]
    devices = list(dict.fromkeys(p['device'] for p in stage_points))
    stages = list(dict.fromkeys(p['stage'] for p in stage_points))
    self_ms = {(p['device'], p['stage']): p['self_ms'] for p in stage_points}
    starts = [0.0] * len(devices)
    for index, stage in enumerate(stages):
        widths = [self_ms.get((d, stage), 0.0) for d in devices]
        left.barh(devices, widths, left=starts, label=stage, color='C%d' % (index % 10),
                  hatch=plots.HATCHES[index % len(plots.HATCHES)], edgecolor='white', linewidth=0)
        starts = [s + w for s, w in zip(starts, widths)]
    left.invert_yaxis()
    left.set_xlabel('self time in the traced step, ms (a bar adds up to the device\'s busy time)')
    left.set_title('time per stage and device (one traced step)')
    left.grid(alpha=0.3, axis='x')
    runs = [p for p in data if 'run' in p]
    step_ms = [p['step_ms'] for p in runs]
    bars = right.barh([p['run'] for p in runs], step_ms,
                      color=['black'] + ['silver'] * (len(runs) - 1))
    right.bar_label(bars, fmt='%.1f ms', fontsize=8, padding=3)
    right.invert_yaxis()
    right.set_xlabel('median step time, ms')
    right.set_title('the configuration (black) and its ablations')
    right.set_xlim(0, max(step_ms) * 1.25)
    figure.suptitle(textwrap.fill(header['title'], 120))
    figure.tight_layout()
    plots.save(figure, path, dpi, caption, plots.legend_below(figure, [left]))

"""The NIC queue study's figure (experiments.nic_queue): each worker's phases in one traced step,
a row per worker, one panel per job (`tfhp.profiling.worker_phases` finds the phases)."""
from tfhp import plots


def draw(path, panels, phases, marks=None, title=None, dpi=plots.DPI, caption=None):
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
    pyplot = plots.load_pyplot()
    heights = [max(1, len(rows)) for _, rows in panels]
    figure, axes = pyplot.subplots(
        len(panels), 1, sharex=True, squeeze=False, gridspec_kw={'height_ratios': heights},
        figsize=(2 * plots.PANEL[0], 0.22 * sum(heights) + 0.9 * len(panels) + 0.6))
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
        plots.timeline_rows(ax, [label for label, _ in rows], panel_title,
                       [xs[p] for xs in (marks or {}).values()], list(marks or {}), fontsize=7)
    plots.save_timelines(figure, axes, 'time since the first worker\'s first op, ms', title, path,
                    dpi, caption, phases)

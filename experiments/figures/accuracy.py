"""The convergence studies' figure (four_combos, stale_gradients, lr_scaling): accuracy vs
images and vs seconds, a median line and a min-max band per series; from points {"series",
"repeat", "step", "images", "seconds", "accuracy"}, one per checkpoint of every repeat."""
import statistics

from tfhp import plots


@plots.styled
def draw(path, series, target=None, title=None, dpi=plots.DPI, caption=None):
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
    pyplot = plots.load_pyplot()
    figure, axes = pyplot.subplots(1, 2, figsize=(2 * plots.PANEL[0] + 0.6, plots.PANEL[1]),
                                   sharey=True)
    for index, (label, curves) in enumerate(series):
        length = min(len(c) for c in curves)
        columns = [[c[i] for c in curves] for i in range(length)]
        accuracy = [_median_band([p[2] for p in points]) for points in columns]
        for ax, x_index in zip(axes, (0, 1)):
            xs = [_median_band([p[x_index] for p in points])[0] for points in columns]
            # Curves cross and run together: a linestyle and a marker (every few
            # checkpoints) each, beside the colour.
            line, = ax.plot(xs, [a[0] for a in accuracy],
                            linestyle=plots.LINESTYLES[index % len(plots.LINESTYLES)],
                            marker=plots.MARKERS[index % len(plots.MARKERS)], markersize=4,
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
    legend = plots.legend_below(figure, axes, title='line: median, band: min-max')
    plots.save(figure, path, dpi, caption, legend)


def draw_data(path, header, data, caption):
    """Draws the points `data`: a series per "series" and a curve per "repeat" of it (each in
    the order they first appear), with the header's "target" accuracy (None: no line)."""
    series = []
    for label in dict.fromkeys(p['series'] for p in data):
        mine = [p for p in data if p['series'] == label]
        series.append((label, [[(p['images'], p['seconds'], p['accuracy'])
                                for p in mine if p['repeat'] == repeat]
                               for repeat in dict.fromkeys(p['repeat'] for p in mine)]))
    draw(path, series, header.get('target'), header['title'], caption=caption)


def _median_band(values):
    return statistics.median(values), min(values), max(values)

"""The step model's validation figure (experiments.emulated_cluster): each job's predicted step
against its measured one, the line y = x and a band of relative error."""
from tfhp import plots


@plots.styled
def draw(path, series, band=0.10, unit='ms', title=None, dpi=plots.DPI,
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
    pyplot = plots.load_pyplot()
    figure, ax = pyplot.subplots(figsize=(plots.PANEL[0], plots.PANEL[0]))
    everything = []
    for index, (label, measured, predicted) in enumerate(series):
        summaries = [m if isinstance(m, dict) else {'median': m, 'min': m, 'max': m}
                     for m in measured]
        xs = [m['median'] for m in summaries]
        ax.errorbar(xs, predicted, xerr=[[m['median'] - m['min'] for m in summaries],
                                         [m['max'] - m['median'] for m in summaries]],
                    linestyle='none', marker=plots.MARKERS[index % len(plots.MARKERS)],
                    markersize=5, markerfacecolor='none', capsize=2, label=label)
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
    plots.save(figure, path, dpi, caption, plots.legend_below(figure, [ax]))

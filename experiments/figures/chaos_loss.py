"""The chaos study's figure: a recovered job's loss by global step, a line per attempt, and the
restart that redid the most steps up close; from points {"attempt", "step", "loss"}, one per
step the chief logged, and the header's "restarts"."""
import statistics

from tfhp import plots


@plots.styled
def draw(path, attempts, restarts, smooth=10, title=None, dpi=plots.DPI, caption=None):
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
      title, dpi, caption: as `experiments.figures.accuracy.draw`'s.
    """
    pyplot = plots.load_pyplot()
    figure, (whole, close) = pyplot.subplots(
        1, 2, figsize=(2 * plots.PANEL[0] + 0.6, plots.PANEL[1]),
        gridspec_kw={'width_ratios': [2, 1]})
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
    legend = plots.legend_below(figure, [whole, close])
    plots.save(figure, path, dpi, caption, legend)


def points(attempts):
    """One point per logged step of `draw`'s attempts [(attempt number, [(step, loss)])]."""
    return [{'attempt': number, 'step': step, 'loss': loss}
            for number, run in attempts for step, loss in run]


def draw_data(path, header, data, caption):
    """Draws the points `data`, a line per attempt (in the order they first appear), with the
    header's "restarts" (`draw`'s)."""
    attempts = [(number, [(p['step'], p['loss']) for p in data if p['attempt'] == number])
                for number in dict.fromkeys(p['attempt'] for p in data)]
    draw(path, attempts, header['restarts'], title=header['title'], caption=caption)


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
            pair, ('tab:blue', 'tab:orange'), plots.MARKERS, ('failed', 'resumed')):
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

"""The frame of a study: the flags every study shares, defined once, and its main.

A study defines its own flags and calls `main(study, ...)` with its defaults for the common
ones; study() makes one measurement per row (a callable, seed -> a JSON-ready record) and hands
them to `run`, which measures them in rounds, prints the table, writes the JSON lines and draws
the plot (experiments/example_study.py is the whole recipe):

    def study():
        frame.run([functools.partial(measure, m) for m in FLAGS.models], FIGURES, TABLE)

    if __name__ == '__main__':
        flags.DEFINE_list('models', ['lenet'], 'Models.')
        frame.main(study, steps=20, warmup_steps=5)

The common flags (`define_flags`); the names older commands used are aliases of them:
  --steps (--num_batches, --num_steps)      timed steps of each run
  --warmup_steps (--num_warmup_batches, --num_warmup)   untimed steps before them
  --repeats (--rounds)                      runs of each row, in rounds
  --seed (--tf_random_seed)                 the first round's seed; round r runs seed + r
  --result_file (--output)                  append one JSON line per record here
  --plot                                    draw the study here (PNG, and an SVG beside it;
                                            needs matplotlib)
  --figure_data                             write the figure's points here, under a header
                                            naming the run (a study that keeps its figure's
                                            data: `figure`)
"""
from absl import app
from absl import flags

from experiments import common
from experiments.figures import kept
from tfhp import provenance

FLAGS = flags.FLAGS


def define_flags(steps=None, warmup_steps=None, repeats=3, seed=1234, plot=None,
                 figure_data=None):
    """Defines the common flags with a study's defaults (None: the study has no such flag).

    Called only when a study runs as a script, so that tests can import several studies
    beside tfhp's own flags.
    Args:
      steps: default of --steps; warmup_steps: of --warmup_steps.
      repeats: default of --repeats (None: each row is measured once, e.g. a fault injected).
      seed: default of --seed (None: nothing in the study is random).
      plot: what --plot draws, for its help (None: the study draws nothing).
      figure_data: what a point of --figure_data is, for its help (None: the study keeps no
        figure data).
    """
    if steps is not None:
        flags.DEFINE_integer('steps', steps, 'Timed steps of each run.')
        flags.DEFINE_alias('num_batches', 'steps')
        flags.DEFINE_alias('num_steps', 'steps')
    if warmup_steps is not None:
        flags.DEFINE_integer('warmup_steps', warmup_steps, 'Untimed steps before them.')
        flags.DEFINE_alias('num_warmup_batches', 'warmup_steps')
        flags.DEFINE_alias('num_warmup', 'warmup_steps')
    if repeats is not None:
        flags.DEFINE_integer('repeats', repeats, 'Runs of each row, in rounds over the rows; '
                             'figures are median [min-max] of them.')
        flags.DEFINE_alias('rounds', 'repeats')
    if seed is not None:
        flags.DEFINE_integer('seed', seed, 'Seed of the first round; round r runs seed + r.')
        flags.DEFINE_alias('tf_random_seed', 'seed')
    flags.DEFINE_string('result_file', None, 'Append one JSON line per record here.')
    flags.DEFINE_alias('output', 'result_file')
    if plot:
        flags.DEFINE_string('plot', None, 'Draw %s here (PNG, and an SVG beside it; needs '
                            "matplotlib: pip install -e '.[plots]')." % plot)
    if figure_data:
        flags.DEFINE_string('figure_data', None, 'Write the figure\'s data here, one JSON line '
                            'per %s under a header naming this run\'s machine, date, commit and '
                            'command (docs/results/data\'s format: python -m experiments.figures '
                            'draws it).' % figure_data)


def main(study, **defaults):
    """Runs `study` as the script's main; its return value is the exit status (None: 0).

    Defines the common flags (`define_flags(**defaults)`) beside those the script defined,
    parses the command line and, before any work, refuses a --plot or --figure_data that cannot
    be written.
    """
    define_flags(**defaults)

    def run_study(argv):
        del argv  # the studies take flags only
        if 'plot' in FLAGS:
            common.check_plot(FLAGS.plot)
        if 'figure_data' in FLAGS:
            common.check_output('figure_data', FLAGS.figure_data)
        return study()
    app.run(run_study)


def run(rows, figures, table, reference=None, finish=None, plot=None):
    """Measures every row --repeats times in rounds, then reports them (`report`).

    Args:
      rows: one callable per row, seed -> its record (a dict).
      figures: the record keys summarised over the repeats (`stats.combine`).
      table: the columns of `common.print_table`, or a function that prints the records
        (e.g. a table per device count).
      reference: what the table's marks compare with, for its legend.
      finish: records -> records, before the table: figures derived across rows, marks.
      plot: (records, path), drawn where --plot is given.
    Returns:
      One record of summaries per row.
    """
    records = common.repeat_in_rounds(rows, FLAGS.repeats, FLAGS.seed, figures)
    if finish:
        records = finish(records)
    report(records, table, reference, plot)
    return records


def report(records, table, reference=None, plot=None):
    """Prints the table, writes the JSON lines (to --result_file too), draws --plot if given.

    `table` and `reference` are `run`'s.
    """
    if callable(table):
        table(records)
    else:
        common.print_table(records, table, reference)
    common.write_records(records, FLAGS.result_file)
    if plot and FLAGS.plot:
        common.draw(lambda path: plot(records, path), FLAGS.plot)


def figure(header, points):
    """Keeps the study's figure: writes its points to --figure_data under `header` (what kind
    of figure, its title, and the run's `tfhp.provenance.stamp()`, taken when it started) and
    draws them at --plot (`experiments.figures.kept.draw_data`: the figure
    `python -m experiments.figures` draws from the kept file), each where it is given."""
    if FLAGS.figure_data:
        provenance.write_figure_data(FLAGS.figure_data, header, points)
        print('Wrote %s' % FLAGS.figure_data)
    if FLAGS.plot:
        common.draw(lambda path: kept.draw_data(path, header, points), FLAGS.plot)

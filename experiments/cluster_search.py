"""A search as parallel clients of one ps task, with and without the container reset (#28).

Each --resets value runs one `tfhp.search` of the --learning_rates (momentum 0.9) on the
learnable synthetic set (`tfhp.data.synthetic`), --repeats rounds (round r: seed --seed + r), at
most --parallel clients at once: every client trains --model for --steps on the one ps task's
variables, in a resource container of its own, and is scored on the validation set. With the
reset (true) each client clears its container as it ends; without it (false:
--container_reset=false) every client's variables and optimizer slots stay on the ps task.

Prints the ranking of each search (median validation top-1 [min-max] over the rounds) and the
ps task's resident memory (VmRSS) after each client ended, both searches side by side: flat
with the reset, growing by about a client's variables and slots per client without it.
--plot draws the memory series.

  python -m experiments.cluster_search --learning_rates=0.005,0.02,0.05,0.2 --repeats=3 \\
      --plot=cluster_search.png
"""
import os
import tempfile

from absl import flags

from experiments import common
from experiments import frame
from experiments import stats
from tfhp import plots
from tfhp import provenance
from tfhp import search
from tfhp import sweep

FLAGS = flags.FLAGS


def tfhp_flags(data_dir, model, image_size, batch_size, steps, seed, eval_batch_size,
               num_eval_batches):
    """The tfhp flags every client of the search gets (the grid adds its learning rate)."""
    return ['--model=' + model, '--image_size=%d' % image_size, '--batch_size=%d' % batch_size,
            '--optimizer=momentum', '--data_dir=' + data_dir,
            # Random crops of 16-pixel images cut too much of the shape away to learn quickly.
            '--random_crop_flip=false', '--num_batches=%d' % steps,
            '--num_warmup_batches=0', '--display_every=%d' % steps,
            '--eval_during_training_every_n_steps=%d' % steps,
            '--eval_batch_size=%d' % eval_batch_size,
            '--num_eval_batches=%d' % num_eval_batches, '--tf_random_seed=%d' % seed]


def measure(reset, rates, tfhp_args, repeats, parallel=2, num_ps=1, timeout_s=1800.0,
            log=print):
    """One search of `rates`; its record: the search's ('ranking', 'runs', 'ps_rss_mb', ...)
    with 'reset', and 'ps_mb_after_client' (the largest ps task's MiB after each client)."""
    record = search.search([{'learning_rate': r} for r in rates], tfhp_args, repeats=repeats,
                           parallel=parallel, num_ps=num_ps, timeout_s=timeout_s, log=log,
                           reset=reset)
    record['study'] = 'cluster_search'
    # The first entry is taken as the ps task starts, before it serves anything.
    record['ps_mb_after_client'] = [max(m or 0.0 for m in after)
                                    for after in record['ps_rss_mb'][1:]]
    for row in record['ranking']:
        row['top_1'] = stats.summarise([run['accuracy'] for run in record['runs']
                                        if run['point'] == row['point']
                                        and run['accuracy'] is not None])
    return record


def growth_mb_per_client(series):
    """The least-squares slope of the ps memory over the clients, MiB per client."""
    n = len(series)
    if n < 2:
        return 0.0
    mean_x, mean_y = (n - 1) / 2.0, sum(series) / n
    return (sum((x - mean_x) * (y - mean_y) for x, y in enumerate(series))
            / sum((x - mean_x) ** 2 for x in range(n)))


def _reset_label(record):
    return 'reset' if record['reset'] else 'no reset'


def table(records):
    """The rankings, then the ps memory after each client, the searches side by side."""
    common.print_table(
        [{'reset': _reset_label(r), 'rank': n + 1, 'setting': sweep.describe(row['point']),
          'top_1': row['top_1'], 'failed': sum(run['error'] is not None for run in r['runs']
                                               if run['point'] == row['point'])}
         for r in records for n, row in enumerate(r['ranking'])],
        [('search', 'reset', None), ('rank', 'rank', '%d'), ('setting', 'setting', None),
         ('validation top-1', 'top_1', '%.3f'), ('failed', 'failed', '%d')])
    print()
    clients = max(len(r['ps_mb_after_client']) for r in records)
    rows = []
    for c in range(clients):
        row = {'client': c + 1}
        for r in records:
            series = r['ps_mb_after_client']
            row[_reset_label(r)] = series[c] if c < len(series) else None
        rows.append(row)
    common.print_table(rows, [('clients ended', 'client', '%d')] + [
        ('ps MiB, %s' % _reset_label(r), _reset_label(r), '%.0f') for r in records])
    for r in records:
        print('%s: the ps task grew %.1f MiB per client (least squares over %d clients)' % (
            _reset_label(r), growth_mb_per_client(r['ps_mb_after_client']),
            len(r['ps_mb_after_client'])))


def plot(records, path):
    """The ps task's memory after each client, above its lowest in that search (the task's
    own ~0.5 GiB would dwarf the difference), a line per search."""
    series = []
    for r in records:
        after = r['ps_mb_after_client']
        series.append((_reset_label(r), list(range(1, len(after) + 1)),
                       [stats.summarise([m - min(after)]) for m in after], {'dodge': False}))
    plots.line_panels(path, [('one ps task, %d clients at once' % records[0]['parallel'],
                              series, [])], 'clients ended',
                      'ps resident memory above its lowest, MiB',
                      title='a search of %d points x %d rounds: the ps memory' % (
                          len(records[0]['points']), records[0]['repeats']),
                      caption=provenance.caption())


def study():
    """One search per --resets value; the rankings, the ps memory and the plot."""
    common.check_choices('resets', FLAGS.resets, ('true', 'false'))
    os.makedirs(FLAGS.work_dir, exist_ok=True)
    data_dir = common.learnable_data(FLAGS.work_dir, FLAGS.image_size,
                                     validation_examples=FLAGS.validation_examples)
    args = tfhp_flags(data_dir, FLAGS.model, FLAGS.image_size, FLAGS.batch_size, FLAGS.steps,
                      FLAGS.seed, FLAGS.eval_batch_size,
                      FLAGS.validation_examples // FLAGS.eval_batch_size)
    records = [measure(reset == 'true', FLAGS.learning_rates, args, FLAGS.repeats,
                       FLAGS.parallel, FLAGS.num_ps, FLAGS.timeout_s)
               for reset in FLAGS.resets]
    frame.report(records, table, plot=plot)


if __name__ == '__main__':
    flags.DEFINE_list('learning_rates', ['0.005', '0.02', '0.05', '0.2'], 'The grid.')
    flags.DEFINE_list('resets', ['true', 'false'], 'A search with clients that reset their '
                      'containers (true) and one whose clients leave them (false).')
    flags.DEFINE_string('model', 'lenet', 'Model of every client.')
    flags.DEFINE_integer('image_size', 16, 'Image size of the data set.')
    flags.DEFINE_integer('batch_size', 32, 'Training batch.')
    flags.DEFINE_integer('eval_batch_size', 100, 'Must divide --validation_examples.')
    flags.DEFINE_integer('validation_examples', 500, 'Validation set (the ranking).')
    flags.DEFINE_integer('parallel', 2, 'Clients at once.')
    flags.DEFINE_integer('num_ps', 1, 'ps tasks.')
    flags.DEFINE_float('timeout_s', 1800.0, 'Bound on each search.')
    flags.DEFINE_string('work_dir', os.path.join(tempfile.gettempdir(), 'tfhp_cluster_search'),
                        'The generated data set.')
    frame.main(study, steps=300, repeats=3, seed=1, plot='the ps memory after each client')

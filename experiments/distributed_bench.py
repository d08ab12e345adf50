"""Distributed training on this machine's loopback: null-model throughput and every mode.

Studies (each job is started by `tfhp.launch`, every task its own process):
  null   global steps/sec of the null models (`tfhp/models/null.py`: one scalar; a 16 MiB dense
         vector; a 16 MiB embedding table with sparse updates, split over the ps tasks) as
         workers grow, synchronous and asynchronous: the parameter server's floor and its
         bandwidth limit, as in the TensorFlow paper's null-model figure.
  modes  images/sec of a small model in each distributed mode: parameter_server and
         distributed_replicated, sync and async; collective all-reduce; in-graph replication
         across the cluster, sync and async; and a launch-to-exit wall time per job.
Every job runs --repeats times (seeds --tf_random_seed + r), in rounds over all jobs; figures
are median [min-max] over the repeats (experiments/stats.py), '*' marking a range apart from
the reference row's: the same null model and protocol on one worker, or `parameter_server
sync` among the modes. Prints a table and appends one JSON line per job (labels, summaries and
each repeat's launcher summary under 'runs') to --output; --plot draws the null-model curves.

  python -m experiments.distributed_bench --output=distributed.jsonl   # tens of minutes
  python -m experiments.distributed_bench --studies=null --workers=1,2 --steps=20 --plot=n.png
"""
import functools
import sys

from absl import flags

from experiments import common
from experiments import frame
from experiments import presets
from experiments import stats
from tfhp.launcher import local_job
from tfhp import plots
from tfhp import provenance

FLAGS = flags.FLAGS


def define_flags():
    """Defines the study's own flags (only when run as a script, so tests can import it)."""
    flags.DEFINE_list('studies', ['null', 'modes'], 'Studies to run: null, modes.')
    flags.DEFINE_list('workers', ['1', '2', '3', '4'], 'Worker counts of the null-model study.')
    flags.DEFINE_list('null_models', ['null_scalar', 'null_dense', 'null_sparse'],
                      'Null models to measure.')
    flags.DEFINE_integer('null_num_ps', 2, 'ps tasks of the null-model study.')
    flags.DEFINE_string('modes_model', 'lenet', 'Model of the modes study.')
    flags.DEFINE_integer('modes_batch_size', 32, 'Per-worker batch of the modes study.')


def run_job(num_ps, num_workers, tfhp_args, controller=False):
    """Runs one job; returns the launcher's summary with status and wall time."""
    return local_job.launch_job(num_ps, num_workers, tfhp_args, controller=controller,
                                out=sys.stderr)[0]


FIGURES = ('images_per_sec', 'global_steps_per_sec', 'dropped_gradients', 'wall_time_s')


def measure(labels, num_ps, num_workers, tfhp_args, controller, seed):
    """One job with seed; its record: labels, the job figures, the launcher's summary."""
    summary = run_job(num_ps, num_workers, list(tfhp_args) + ['--tf_random_seed=%d' % seed],
                      controller)
    # A figure the job has none of (e.g. no chief figure) is left out, not summarised as None.
    figures = {k: v for k, v in common.cluster_figures(summary).items() if v is not None}
    return dict(labels, num_ps=num_ps, num_workers=num_workers, seed=seed,
                status=summary['status'], wall_time_s=summary['wall_time_s'], job=summary,
                **figures)


def _common(batch_size, steps, warmup_steps):
    return ['--batch_size=%d' % batch_size, '--num_batches=%d' % steps,
            '--num_warmup_batches=%d' % warmup_steps, '--display_every=1000']


def null_rows(models, workers, num_ps, steps, warmup_steps):
    """Measurements (seed -> record) of each null model, sync and async, per worker count."""
    rows = []
    for model in models:
        for sync in ('true', 'false'):
            args = _common(1, steps, warmup_steps) + [
                '--model=' + model, '--weight_decay=0', '--cross_replica_sync=' + sync,
                '--partition_min_bytes=%d' % (1 << 20)]
            labels = {'study': 'null', 'model': model, 'label': '%s %s' % (
                model, 'sync' if sync == 'true' else 'async')}
            rows += [functools.partial(measure, labels, num_ps, n, args, False)
                     for n in workers]
    return rows


def modes_rows(model, batch_size, steps, warmup_steps):
    """Measurements (seed -> record) of `model` in each distributed mode
    (`presets.DISTRIBUTED`), 2 workers."""
    return [functools.partial(measure, {'study': 'modes', 'model': model, 'label': label},
                              preset.ps_tasks, 2, _common(batch_size, steps, warmup_steps) +
                              ['--model=' + model] + preset.args(), preset.controller)
            for label, preset in presets.DISTRIBUTED.items()]


def mark(records):
    """Null rows against the same label on the fewest workers; modes against the first."""
    for label in {r['label'] for r in records}:
        rows = [r for r in records if r['label'] == label]
        stats.mark(rows, min(rows, key=lambda r: r['num_workers']), FIGURES)
    modes = [r for r in records if r['study'] == 'modes']
    if modes:
        stats.mark(modes, modes[0], FIGURES)
    return records


TABLE = [('job', 'label', None), ('workers', 'num_workers', '%d'), ('ps', 'num_ps', '%d'),
         ('images/s', 'images_per_sec', '%.1f'), ('global steps/s', 'global_steps_per_sec',
                                                  '%.1f'),
         ('dropped', 'dropped_gradients', '%d'), ('wall s', 'wall_time_s', '%.1f')]


def plot(records, path):
    """Global steps/sec vs workers, a panel per null model, sync and async lines, log y;
    nothing without null-model records."""
    null = [r for r in records if r['study'] == 'null']
    if not null:
        return
    models = sorted({r['model'] for r in null})
    panels = []
    for model in models:
        series = []
        for label in sorted({r['label'] for r in null if r['model'] == model}):
            rows = sorted((r for r in null if r['label'] == label),
                          key=lambda r: r['num_workers'])
            series.append((label.split()[-1], [r['num_workers'] for r in rows],
                           [r['global_steps_per_sec'] for r in rows]))
        panels.append((model, series, []))
    workers = sorted({r['num_workers'] for r in null})
    plots.line_panels(path, panels, 'workers (processes on this machine, loopback gRPC)',
                      "global steps/sec (the chief's count)", logy=True,
                      title='null models, %d ps tasks: %s' % (
                          null[0]['num_ps'], plots.spread_text(null[0]['repeats'])),
                      xticks=[(n, str(n)) for n in workers], sharey=True,
                      caption=provenance.caption())


def study():
    """The studies of --studies, measured and reported."""
    rows = []
    if 'null' in FLAGS.studies:
        rows += null_rows(FLAGS.null_models, [int(w) for w in FLAGS.workers],
                          FLAGS.null_num_ps, FLAGS.steps, FLAGS.warmup_steps)
    if 'modes' in FLAGS.studies:
        rows += modes_rows(FLAGS.modes_model, FLAGS.modes_batch_size, FLAGS.steps,
                           FLAGS.warmup_steps)
    frame.run(rows, FIGURES, TABLE, 'the same job on the fewest workers (null), or the first '
              'mode', finish=mark, plot=plot)


if __name__ == '__main__':
    define_flags()
    frame.main(study, steps=100, warmup_steps=10,
               plot='the null-model curves (global steps/sec vs workers)')

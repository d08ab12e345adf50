"""Distributed training on this machine's loopback: null-model throughput and every mode.

Studies (each job is started by `tfhp.launch`, every task its own process):
  null   global steps/sec of the null models (`tfhp/models/null.py`: one scalar; a 16 MiB dense
         vector; a 16 MiB embedding table with sparse updates, split over the ps tasks) as
         workers grow, synchronous and asynchronous: the parameter server's floor and its
         bandwidth limit, as in the TensorFlow paper's null-model figure.
  modes  images/sec of a small model in each distributed mode: parameter_server and
         distributed_replicated, sync and async; collective all-reduce; in-graph replication
         across the cluster, sync and async; and a launch-to-exit wall time per job.
Prints a table and appends one JSON line per job (the launcher's summary plus the study's
labels) to --output.

  python -m experiments.distributed_bench --output=distributed.jsonl   # tens of minutes
  python -m experiments.distributed_bench --studies=null --workers=1,2 --steps=20
"""
import sys

from absl import app
from absl import flags

from tfhp import launch
from tfhp import timing

flags.DEFINE_list('studies', ['null', 'modes'], 'Studies to run: null, modes.')
flags.DEFINE_list('workers', ['1', '2', '3', '4'], 'Worker counts of the null-model study.')
flags.DEFINE_list('null_models', ['null_scalar', 'null_dense', 'null_sparse'],
                  'Null models to measure.')
flags.DEFINE_integer('null_num_ps', 2, 'ps tasks of the null-model study.')
flags.DEFINE_string('modes_model', 'lenet', 'Model of the modes study.')
flags.DEFINE_integer('modes_batch_size', 32, 'Per-worker batch of the modes study.')
flags.DEFINE_integer('steps', 100, 'Timed steps per job.')
flags.DEFINE_integer('warmup_steps', 10, 'Untimed steps per job.')
flags.DEFINE_string('output', None, 'Append one JSON line per job here.')
# (Names differ from tfhp.cli's flags: both modules are imported together in tests.)
FLAGS = flags.FLAGS

# label -> (num_ps, tfhp flags, launcher starts a controller) of the modes study.
MODES = {
    'parameter_server sync': (1, ['--variable_update=parameter_server'], False),
    'parameter_server async': (1, ['--variable_update=parameter_server',
                                   '--cross_replica_sync=false'], False),
    'distributed_replicated sync': (1, ['--variable_update=distributed_replicated'], False),
    'distributed_replicated async': (1, ['--variable_update=distributed_replicated',
                                         '--cross_replica_sync=false'], False),
    'collective_all_reduce': (0, ['--variable_update=collective_all_reduce'], False),
    'in-graph sync': (1, ['--graph_mode=in_graph'], False),
    'in-graph async': (1, ['--graph_mode=in_graph', '--cross_replica_sync=false'], False),
    'in-graph sync, controller task': (1, ['--graph_mode=in_graph'], True),
}


def run_job(num_ps, num_workers, tfhp_args, controller=False):
    """Runs one job; returns the launcher's summary with status and wall time."""
    return launch.launch_job(num_ps, num_workers, tfhp_args, controller=controller,
                             out=sys.stderr)[0]


def _common(batch_size):
    return ['--batch_size=%d' % batch_size, '--num_batches=%d' % FLAGS.steps,
            '--num_warmup_batches=%d' % FLAGS.warmup_steps, '--display_every=1000']


def null_study():
    """Global steps/sec of each null model, sync and async, for each worker count."""
    for model in FLAGS.null_models:
        for sync in ('true', 'false'):
            for workers in [int(w) for w in FLAGS.workers]:
                args = _common(1) + ['--model=' + model, '--weight_decay=0',
                                     '--cross_replica_sync=' + sync,
                                     '--partition_min_bytes=%d' % (1 << 20)]
                summary = run_job(FLAGS.null_num_ps, workers, args)
                yield dict(summary, study='null', label='%s %s' % (
                    model, 'sync' if sync == 'true' else 'async'), model=model)


def modes_study():
    """images/sec of --modes_model in each distributed mode, 2 workers."""
    for label, (num_ps, args, controller) in MODES.items():
        summary = run_job(num_ps, 2, _common(FLAGS.modes_batch_size) +
                          ['--model=' + FLAGS.modes_model] + args, controller)
        yield dict(summary, study='modes', label=label, model=FLAGS.modes_model)


def main(argv):
    del argv
    studies = {'null': null_study, 'modes': modes_study}
    print('%-34s %7s %7s %14s %14s %9s %7s' % ('job', 'workers', 'ps', 'images/sec',
                                               'global steps/s', 'dropped', 'wall s'))
    for name in FLAGS.studies:
        for record in studies[name]():
            print('%-34s %7d %7d %14.1f %14s %9d %7.1f' % (
                record['label'], record['num_workers'], record['num_ps'],
                record['cluster_images_per_sec'],
                '%.1f' % record['global_steps_per_sec']
                if record['global_steps_per_sec'] is not None else '-',
                record['dropped_gradients'], record['wall_time_s']))
            if FLAGS.output:
                timing.append_json(FLAGS.output, record)


if __name__ == '__main__':
    app.run(main)

"""The classic ablations: one setting changed at a time, each configuration its own process.

  pipelining      software-pipelined input (staging areas) on and off, real data: lenet at
                  16x16 from 256x256 JPEGs, where input and compute take about as long
  data_format     NHWC vs NCHW (a CPU build that refuses NCHW shows the refusal)
  batchnorm       fused vs composite batch norm
  variable_update each in-graph variable update and all-reduce on --num_devices devices, and
                  each between-graph mode on 2 workers
  backup_workers  synchronous job with worker 2 delayed by --straggler_delay_ms each step:
                  every gradient awaited vs one backup worker (the step-time gain), and no
                  straggler for reference
  ps_count        parameter-server tasks vs throughput for a 16 MiB dense variable (null_dense,
                  split over the ps tasks), 2 asynchronous workers

One-process configurations run as `python -m tfhp`, jobs through `tfhp.launch`; a configuration
tfhp refuses is listed with its reason (and not repeated). Every configuration runs --repeats
times (seeds --tf_random_seed + r), in rounds over all of them; figures are median [min-max]
over the repeats, '*' marking a range apart from the ablation's reference setting (the gain's,
else its first; experiments/stats.py). Prints a table and one JSON line per configuration.

  python -m experiments.ablations                               # all, ~12 minutes on 2 cores
  python -m experiments.ablations --ablations=backup_workers --straggler_delay_ms=500
"""
import collections
import functools
import os
import tempfile

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import flags  # pylint: disable=g-import-not-at-top

from experiments import common
from experiments import frame
from experiments import presets
from experiments import stats

ABLATIONS = ('pipelining', 'data_format', 'batchnorm', 'variable_update', 'backup_workers',
             'ps_count')
FLAGS = flags.FLAGS

# num_workers 0: one process; else a job of num_ps ps and num_workers workers.
Configuration = collections.namedtuple('Configuration', ['label', 'num_ps', 'num_workers',
                                                         'args'])

def local(label, *args):
    """A one-process configuration."""
    return Configuration(label, 0, 0, list(args))


def configurations(ablation, data_dir, num_devices, straggler_delay_ms):
    """The configurations of one ablation (flags beyond the run length)."""
    if ablation == 'pipelining':
        # lenet at 16x16 computes on one core about as long as decoding 256x256 JPEGs takes on
        # the other (experiments.input_bench's pipelining setting); two session threads.
        real = ['--model=lenet', '--image_size=16', '--batch_size=64', '--data_dir=' + data_dir,
                '--num_inter_threads=2', '--num_intra_threads=1']
        return [local('staged input', *real), local('sequential input', '--staged_input=false',
                                                    *real)]
    if ablation == 'data_format':
        return [local(f, '--model=lenet', '--batch_size=32', '--data_format=' + f)
                for f in ('NHWC', 'NCHW')]
    if ablation == 'batchnorm':
        model = ['--model=resnet50', '--image_size=32', '--batch_size=8']
        return [local('fused', *model), local('composite', '--fuse_batchnorm=false', *model)]
    if ablation == 'variable_update':
        model = ['--model=lenet', '--batch_size=32']
        return [Configuration(label, preset.ps_tasks, 2, model + preset.args())
                if preset.cluster else
                local(label, '--num_devices=%d' % num_devices, *(model + preset.args()))
                for label, preset in presets.ABLATIONS.items()]
    if ablation == 'backup_workers':
        job = ['--model=lenet', '--batch_size=32']
        straggler = ['--straggler_workers=2', '--straggler_delay_ms=%g' % straggler_delay_ms]
        return [Configuration('no straggler, 3 of 3', 1, 3, job),
                Configuration('straggler, 3 of 3', 1, 3, job + straggler),
                Configuration('straggler, 2 of 3 (1 backup)', 1, 3,
                              job + straggler + ['--replicas_to_aggregate=2'])]
    if ablation == 'ps_count':
        job = ['--model=null_dense', '--batch_size=1', '--weight_decay=0',
               '--cross_replica_sync=false', '--partition_min_bytes=%d' % (1 << 20)]
        return [Configuration('%d ps' % n, n, 2, job) for n in (1, 2, 4)]
    raise ValueError('unknown ablation %r; one of %s' % (ablation, ', '.join(ABLATIONS)))


def measure(ablation, configuration, run_args, timeout_s, seed=1234):
    """Runs one configuration; returns its JSON record (with `error` if it did not run)."""
    c = configuration
    record = {'study': 'ablations', 'ablation': ablation, 'setting': c.label, 'num_ps': c.num_ps,
              'num_workers': c.num_workers, 'flags': c.args + list(run_args),
              'seed': seed}
    run_flags = record['flags'] + ['--tf_random_seed=%d' % seed]
    if not c.num_workers:
        outcome = common.run_tfhp(run_flags, timeout_s)
        if outcome.error:
            return dict(record, error=outcome.error)
        return dict(record, images_per_sec=outcome.result['images_per_sec'],
                    step_time_ms=outcome.result['step_time_ms']['p50'])
    run = common.run_cluster(c.num_ps, c.num_workers, run_flags, timeout_s)
    if run.error:
        return dict(record, error=run.error)
    job = common.cluster_figures(run.summary)
    steps_per_sec = job['global_steps_per_sec']
    return dict(record, images_per_sec=job['images_per_sec'],
                global_steps_per_sec=steps_per_sec,
                step_time_ms=1000.0 / steps_per_sec if steps_per_sec else None,
                dropped_gradients=job['dropped_gradients'])


def once_refused(measure_fn):
    """measure_fn(seed), except that a refused configuration is not run again."""
    refused = []

    def measure_seed(seed):
        if refused:
            return dict(refused[0], seed=seed)
        record = measure_fn(seed)
        if record.get('error', '').startswith('refused'):
            refused.append(record)
        return record
    return measure_seed


FIGURES = ('images_per_sec', 'step_time_ms', 'global_steps_per_sec', 'dropped_gradients',
           'step_time_gain')

# The setting each gain is measured against, per ablation that reports one.
GAIN_REFERENCES = {'pipelining': 'sequential input', 'backup_workers': 'straggler, 3 of 3'}


def add_gains(records):
    """Each setting's gain per repeat: its reference's step time over its own (GAIN_REFERENCES).

    Args:
      records: combined records (`stats.combine`); repeat r is compared with repeat r.
    """
    for ablation, reference in GAIN_REFERENCES.items():
        by_setting = {r['setting']: r for r in records if r['ablation'] == ablation}
        base = by_setting.get(reference, {}).get('step_time_ms')
        for r in by_setting.values():
            if base and r.get('step_time_ms'):
                r['step_time_gain'] = stats.summarise([
                    b / own for b, own in zip(base['values'], r['step_time_ms']['values'])
                    if b is not None and own])
    return records


def mark(records):
    """Marks each ablation's settings against its reference (the gain's, else the first)."""
    for ablation in dict.fromkeys(r['ablation'] for r in records):
        rows = [r for r in records if r['ablation'] == ablation]
        reference = next((r for r in rows if r['setting'] == GAIN_REFERENCES.get(ablation)),
                         rows[0])
        stats.mark(rows, reference, FIGURES)
    return records


TABLE = [('ablation', 'ablation', None), ('setting', 'setting', None),
         ('images/s', 'images_per_sec', '%.1f'), ('step ms', 'step_time_ms', '%.2f'),
         ('global steps/s', 'global_steps_per_sec', '%.1f'),
         ('gain', 'step_time_gain', '%.2fx'), ('dropped', 'dropped_gradients', '%d'),
         ('not run', 'error', None)]


def study():
    """The ablations of --ablations, every configuration measured and reported."""
    common.check_choices('ablations', FLAGS.ablations, ABLATIONS)
    os.makedirs(FLAGS.work_dir, exist_ok=True)
    data_dir = common.learnable_data(FLAGS.work_dir, image_size=256, train_examples=1024,
                                     validation_examples=20)
    run_args = ['--num_batches=%d' % FLAGS.steps,
                '--num_warmup_batches=%d' % FLAGS.warmup_steps,
                '--display_every=%d' % FLAGS.steps] + FLAGS.tfhp_flags
    measures = [once_refused(functools.partial(measure, a, c, run_args, FLAGS.timeout_s))
                for a in FLAGS.ablations
                for c in configurations(a, data_dir, FLAGS.num_devices,
                                        FLAGS.straggler_delay_ms)]
    frame.run(measures, FIGURES, TABLE,
              "each ablation's reference setting (the gain's, else its first)",
              finish=lambda records: mark(add_gains(records)))


if __name__ == '__main__':
    flags.DEFINE_list('ablations', list(ABLATIONS), 'Ablations to run: %s.'
                      % ', '.join(ABLATIONS))
    flags.DEFINE_integer('num_devices', 2, 'variable_update: in-graph devices.')
    flags.DEFINE_float('straggler_delay_ms', 200.0, 'backup_workers: the straggler\'s delay.')
    flags.DEFINE_float('timeout_s', 600.0, 'Bound on each configuration.')
    flags.DEFINE_string('work_dir', os.path.join(tempfile.gettempdir(), 'tfhp_ablations'),
                        'Where the generated data set lives.')
    flags.DEFINE_list('tfhp_flags', [], 'Extra tfhp flags for every configuration.')
    frame.main(study, steps=30, warmup_steps=5)

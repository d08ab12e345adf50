"""Input pipeline figures: RecordInput vs tf.data vs synthetic data, and software pipelining.

Throughput study, per setting (224x224 ResNet preprocessing; a small-image setting): images/sec
the RecordInput and tf.data pipelines deliver alone (--input_only), and training images/sec of
the setting's model on synthetic data (compute alone), RecordInput and tf.data.

Pipelining study, for a model whose compute time is close to its input time (lenet at 16x16
fed from 256x256 JPEGs): the host has one core for input and one for compute (the CPU analogue
of a host feeding an accelerator). Input time is the input-only step on one thread, compute time
the synthetic-data step on one thread; the trained step runs on two threads without and with
software pipelining (--staged_input). Pipelined should cost max(input, compute), within 10%,
not their sum. RecordInput's preprocessing shares the session's two inter-op threads with
compute; tf.data's runs on its own private thread (and its prefetch overlaps even "sequential").

Every measurement runs `python -m tfhp` in a process of its own: TensorFlow sizes its thread
pools once per process, so in one process every measurement would silently get the first one's
threads. Each is repeated --repeats times (seeds --seed + r), in rounds over all of a
study's measurements (so a slow spell of the machine hits them alike); figures are median
[min-max] over the repeats (experiments/stats.py), the ratios taken within each round. '*'
marks a training row whose range is apart from synthetic data's, and a pipelined row whose
range is apart from the same pipeline's sequential one.

Data sets are generated (tfhp.data.synthetic, JPEG) under --data_root unless they exist.

  python -m experiments.input_bench                                # full figures
  python -m experiments.input_bench --num_batches=3 --num_examples_scale=0.1 --repeats=1  # smoke
  python -m experiments.input_bench --settings= --num_batches=100      # pipelining study only
  python -m experiments.input_bench --settings=resnet224 --pipelining_setting= --num_batches=10
"""
import collections
import functools
import os
import tempfile

from absl import flags

from experiments import common
from experiments import frame
from experiments import stats
from tfhp.data import synthetic

# name: (model, output image size, stored image size, batch size, training examples)
SETTINGS = {
    'resnet224': ('resnet50', 224, 256, 32, 512),
    'small32': ('lenet', 32, 40, 64, 4096),
    # lenet at 16x16 on one core computes about as long as decoding and cropping 256x256 JPEGs
    # takes on another (38 vs 29 ms per 64 images on the 2-core development box).
    'pipelining': ('lenet', 16, 256, 64, 1024),
}
FLAGS = flags.FLAGS

# How long, how often and on how much data every measurement runs.
Options = collections.namedtuple('Options', ['num_batches', 'num_warmup_batches', 'repeats',
                                             'num_examples_scale', 'data_root', 'timeout_s',
                                             'tf_random_seed'], defaults=[1234])

# One measurement: its label, setting, real data (else synthetic), (inter, intra) threads, and
# the data flags beyond --data_dir.
Measurement = collections.namedtuple('Measurement', ['label', 'setting', 'real', 'threads',
                                                     'data'])


def define_flags():
    """Defines the study's own flags, the common ones being the frame's (only when run as a
    script, so tests can import it)."""
    flags.DEFINE_list('settings', list(SETTINGS), 'Throughput settings to measure.')
    flags.DEFINE_string('pipelining_setting', 'pipelining',
                        'Setting of the pipelining study (empty: skip it).')
    flags.DEFINE_list('pipelines', list(PIPELINES), 'Pipelines of the pipelining study: %s.'
                      % ', '.join(PIPELINES))
    flags.DEFINE_float('num_examples_scale', 1.0, 'Scale the generated data sets.')
    flags.DEFINE_string('data_root', os.path.join(tempfile.gettempdir(), 'tfhp_input_bench'),
                        'Where generated data sets live.')
    flags.DEFINE_float('timeout_s', 900.0, 'Bound on each run.')


def data_dir(setting, options):
    """The setting's generated data set (made on first use)."""
    _, _, stored, _, examples = SETTINGS[setting]
    count = max(int(options.num_examples_scale * examples), 20)
    directory = os.path.join(options.data_root, '%s_%d' % (setting, count))
    if not os.path.exists(os.path.join(directory, 'dataset_info.json')):
        synthetic.generate(directory, num_classes=10, image_size=stored, train_examples=count,
                           validation_examples=20, train_shards=8, validation_shards=2)
    return directory


def tfhp_args(options, m, seed=1234):
    """The `python -m tfhp` flags of measurement m."""
    model, image_size, _, batch_size, _ = SETTINGS[m.setting]
    args = ['--tf_random_seed=%d' % seed, '--model=' + model, '--batch_size=%d' % batch_size,
            '--image_size=%d' % image_size, '--num_classes=10',
            '--num_inter_threads=%d' % m.threads[0],
            '--num_intra_threads=%d' % m.threads[1], '--num_batches=%d' % options.num_batches,
            '--num_warmup_batches=%d' % options.num_warmup_batches]
    if m.real:
        args.append('--data_dir=' + data_dir(m.setting, options))
    args += ['--%s=%s' % (k, str(v).lower()) for k, v in sorted(m.data.items())]
    return args


def measure(options, m, seed):
    """One run of measurement m; its record.

    Raises:
      RuntimeError: the run failed (names the measurement and why).
    """
    outcome = common.run_tfhp(tfhp_args(options, m, seed), options.timeout_s)
    if outcome.error:
        raise RuntimeError('%s (%s): %s' % (m.label, m.setting, outcome.error))
    model, image_size, _, batch_size, _ = SETTINGS[m.setting]
    return {'study': 'input_bench', 'setting': m.setting, 'label': m.label, 'model': model,
            'batch_size': batch_size, 'image_size': image_size, 'seed': seed,
            'images_per_sec': outcome.result['images_per_sec'],
            'step_time_ms': outcome.result['step_time_ms']['p50'],
            'threads': list(m.threads), 'data': outcome.result['config']['data']}


FIGURES = ('images_per_sec', 'step_time_ms', 'ratio_to_max_input_compute',
           'ratio_to_sum_input_compute')


def measure_all(options, measurements, add_ratios=None):
    """Runs every measurement options.repeats times, in rounds; one record of summaries each.

    Args:
      options: `Options`.
      measurements: `Measurement`s.
      add_ratios: optional, called with each row's runs (runs[row][round]) before they are
        summarised, to add figures computed within a round.
    Raises:
      RuntimeError: a run failed (names the measurement and why).
    """
    seeds, runs = common.run_in_rounds(
        [functools.partial(measure, options, m) for m in measurements], options.repeats,
        options.tf_random_seed)
    if add_ratios:
        add_ratios(runs)
    return [stats.combine(row_runs, FIGURES, seeds) for row_runs in runs]


def throughput(options, setting):
    """Input-only and training images/sec of one setting; training marked against synthetic."""
    records = measure_all(options, [
        Measurement('input RecordInput', setting, True, (0, 0), {'input_only': True}),
        Measurement('input tf.data', setting, True, (0, 0),
                    {'input_only': True, 'use_datasets': True}),
        Measurement('train synthetic', setting, False, (0, 0), {}),
        Measurement('train RecordInput', setting, True, (0, 0), {}),
        Measurement('train tf.data', setting, True, (0, 0), {'use_datasets': True})])
    stats.mark(records[2:], records[2], FIGURES)
    return records


def _pipelining_ratios(runs):
    """Each round's sequential and pipelined step over max and sum of its input and compute."""
    for i, compute in enumerate(runs[0]):
        for one_core, sequential, pipelined in (runs[p:p + 3] for p in range(1, len(runs), 3)):
            bound = max(one_core[i]['step_time_ms'], compute['step_time_ms'])
            total = one_core[i]['step_time_ms'] + compute['step_time_ms']
            for run in (sequential[i], pipelined[i]):
                run['ratio_to_max_input_compute'] = run['step_time_ms'] / bound
                run['ratio_to_sum_input_compute'] = run['step_time_ms'] / total


# Pipelines of the pipelining study: name -> (data flags, session threads (inter, intra)).
# RecordInput's preprocessing runs on the session's threads: two, shared with compute.
# tf.data's runs on one private thread; the session's one thread computes.
PIPELINES = collections.OrderedDict([
    ('RecordInput', ({}, (2, 1))),
    ('tf.data', (dict(use_datasets=True, datasets_num_private_threads=1), (1, 1))),
])


def pipelining(options, setting, pipelines=tuple(PIPELINES)):
    """Input, compute, sequential and pipelined step times, per pipeline (PIPELINES keys)."""
    measurements = [Measurement('compute (1 thread)', setting, False, (1, 1), {})]
    for name in pipelines:
        data, threads = PIPELINES[name]
        measurements.append(Measurement('%s input (1 thread)' % name, setting, True, (1, 1),
                                        dict(data, input_only=True)))
        for kind, staged in (('sequential', False), ('pipelined', True)):
            measurements.append(Measurement(
                '%s %s (%d+%d threads)' % (name, kind, threads[0], 1 if data else 0), setting,
                True, threads, dict(data, staged_input=staged)))
    records = measure_all(options, measurements, _pipelining_ratios)
    for p in range(len(pipelines)):
        sequential, pipelined = records[2 + 3 * p:4 + 3 * p]
        stats.mark([sequential, pipelined], sequential, FIGURES)
    return records


TABLE = [('setting', 'setting', None), ('model', 'model', None),
         ('measurement', 'label', None), ('images/s', 'images_per_sec', '%.1f'),
         ('step ms', 'step_time_ms', '%.2f'),
         ('/max(in,c)', 'ratio_to_max_input_compute', '%.3f')]


def study():
    """The throughput study of each of --settings, then the pipelining study, reported."""
    options = Options(FLAGS.steps, FLAGS.warmup_steps, FLAGS.repeats, FLAGS.num_examples_scale,
                      FLAGS.data_root, FLAGS.timeout_s, FLAGS.seed)
    common.check_choices('settings', FLAGS.settings, SETTINGS)
    results = [r for s in FLAGS.settings for r in throughput(options, s)]
    if FLAGS.pipelining_setting:
        common.check_choices('pipelining_setting', [FLAGS.pipelining_setting], SETTINGS)
        common.check_choices('pipelines', FLAGS.pipelines, PIPELINES)
        results += pipelining(options, FLAGS.pipelining_setting, FLAGS.pipelines)
    frame.report(results, TABLE, 'train synthetic (training rows), or the same '
                 "pipeline's sequential row (pipelined rows)")


if __name__ == '__main__':
    define_flags()
    frame.main(study, steps=30, warmup_steps=5)

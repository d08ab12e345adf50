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
threads. Each is repeated --repeats times, in rounds over all of a study's measurements (so a
slow spell of the machine hits them alike), and the run with the median step time is reported.

Data sets are generated (tfhp.data.synthetic, JPEG) under --data_root unless they exist.

  python -m experiments.input_bench                                # full figures
  python -m experiments.input_bench --num_batches=3 --num_examples_scale=0.1 --repeats=1  # smoke
  python -m experiments.input_bench --settings= --num_batches=100      # pipelining study only
  python -m experiments.input_bench --settings=resnet224 --pipelining_setting= --num_batches=10
"""
import collections
import os
import tempfile

from absl import app
from absl import flags

from experiments import common
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
                                             'num_examples_scale', 'data_root', 'timeout_s'])

# One measurement: its label, setting, real data (else synthetic), (inter, intra) threads, and
# the data flags beyond --data_dir.
Measurement = collections.namedtuple('Measurement', ['label', 'setting', 'real', 'threads',
                                                     'data'])


def define_flags():
    """Defines the script's flags (only when run as a script, so tests can import it)."""
    flags.DEFINE_list('settings', list(SETTINGS), 'Throughput settings to measure.')
    flags.DEFINE_string('pipelining_setting', 'pipelining',
                        'Setting of the pipelining study (empty: skip it).')
    flags.DEFINE_integer('num_batches', 30, 'Timed steps per measurement.')
    flags.DEFINE_integer('num_warmup_batches', 5, 'Untimed steps per measurement.')
    flags.DEFINE_integer('repeats', 3, 'Runs per measurement; the median one is reported.')
    flags.DEFINE_float('num_examples_scale', 1.0, 'Scale the generated data sets.')
    flags.DEFINE_string('data_root', os.path.join(tempfile.gettempdir(), 'tfhp_input_bench'),
                        'Where generated data sets live.')
    flags.DEFINE_float('timeout_s', 900.0, 'Bound on each run.')
    flags.DEFINE_string('result_file', None, 'Append JSON lines here.')


def data_dir(setting, options):
    """The setting's generated data set (made on first use)."""
    _, _, stored, _, examples = SETTINGS[setting]
    count = max(int(options.num_examples_scale * examples), 20)
    directory = os.path.join(options.data_root, '%s_%d' % (setting, count))
    if not os.path.exists(os.path.join(directory, 'dataset_info.json')):
        synthetic.generate(directory, num_classes=10, image_size=stored, train_examples=count,
                           validation_examples=20, train_shards=8, validation_shards=2)
    return directory


def tfhp_args(options, m):
    """The `python -m tfhp` flags of measurement m."""
    model, image_size, _, batch_size, _ = SETTINGS[m.setting]
    args = ['--model=' + model, '--batch_size=%d' % batch_size, '--image_size=%d' % image_size,
            '--num_classes=10', '--num_inter_threads=%d' % m.threads[0],
            '--num_intra_threads=%d' % m.threads[1], '--num_batches=%d' % options.num_batches,
            '--num_warmup_batches=%d' % options.num_warmup_batches]
    if m.real:
        args.append('--data_dir=' + data_dir(m.setting, options))
    args += ['--%s=%s' % (k, str(v).lower()) for k, v in sorted(m.data.items())]
    return args


def measure_all(options, measurements):
    """Runs every measurement options.repeats times, in rounds; returns one record each.

    Raises:
      RuntimeError: a run failed (names the measurement and why).
    """
    runs = [[] for _ in measurements]
    for _ in range(options.repeats):
        for m, m_runs in zip(measurements, runs):
            outcome = common.run_tfhp(tfhp_args(options, m), options.timeout_s)
            if outcome.error:
                raise RuntimeError('%s (%s): %s' % (m.label, m.setting, outcome.error))
            m_runs.append(outcome.result)
    records = []
    for m, m_runs in zip(measurements, runs):
        ranked = sorted(m_runs, key=lambda r: r['step_time_ms']['p50'])
        result = ranked[len(ranked) // 2]
        model, image_size, _, batch_size, _ = SETTINGS[m.setting]
        records.append({
            'study': 'input_bench', 'setting': m.setting, 'label': m.label, 'model': model,
            'batch_size': batch_size, 'image_size': image_size,
            'images_per_sec': result['images_per_sec'],
            'step_time_ms': result['step_time_ms']['p50'],
            'step_time_ms_runs': [r['step_time_ms']['p50'] for r in m_runs],
            'threads': list(m.threads), 'data': result['config']['data']})
    return records


def throughput(options, setting):
    """Input-only and training images/sec of one setting."""
    return measure_all(options, [
        Measurement('input RecordInput', setting, True, (0, 0), {'input_only': True}),
        Measurement('input tf.data', setting, True, (0, 0),
                    {'input_only': True, 'use_datasets': True}),
        Measurement('train synthetic', setting, False, (0, 0), {}),
        Measurement('train RecordInput', setting, True, (0, 0), {}),
        Measurement('train tf.data', setting, True, (0, 0), {'use_datasets': True})])


def pipelining(options, setting):
    """Input, compute, sequential and pipelined step times, per pipeline."""
    measurements = [Measurement('compute (1 thread)', setting, False, (1, 1), {})]
    # RecordInput's preprocessing runs on the session's threads: two, shared with compute.
    # tf.data's runs on one private thread; the session's one thread computes.
    for name, data, threads in (
            ('RecordInput', {}, (2, 1)),
            ('tf.data', dict(use_datasets=True, datasets_num_private_threads=1), (1, 1))):
        measurements.append(Measurement('%s input (1 thread)' % name, setting, True, (1, 1),
                                        dict(data, input_only=True)))
        for kind, staged in (('sequential', False), ('pipelined', True)):
            measurements.append(Measurement(
                '%s %s (%d+%d threads)' % (name, kind, threads[0], 1 if data else 0), setting,
                True, threads, dict(data, staged_input=staged)))
    records = measure_all(options, measurements)
    compute = records[0]['step_time_ms']
    for one_core, sequential, pipelined in (records[1:4], records[4:7]):
        bound = max(one_core['step_time_ms'], compute)
        total = one_core['step_time_ms'] + compute
        for record in (sequential, pipelined):
            record['ratio_to_max_input_compute'] = record['step_time_ms'] / bound
            record['ratio_to_sum_input_compute'] = record['step_time_ms'] / total
    return records


def main(_):
    options = Options(FLAGS.num_batches, FLAGS.num_warmup_batches, FLAGS.repeats,
                      FLAGS.num_examples_scale, FLAGS.data_root, FLAGS.timeout_s)
    common.check_choices('settings', FLAGS.settings, SETTINGS)
    results = [r for s in FLAGS.settings for r in throughput(options, s)]
    if FLAGS.pipelining_setting:
        common.check_choices('pipelining_setting', [FLAGS.pipelining_setting], SETTINGS)
        results += pipelining(options, FLAGS.pipelining_setting)
    print('%-10s %-9s %-34s %12s %10s %9s' % ('setting', 'model', 'measurement', 'images/sec',
                                             'step ms', '/max(in,c)'))
    for r in results:
        ratio = r.get('ratio_to_max_input_compute')
        print('%-10s %-9s %-34s %12.1f %10.2f %9s' % (
            r['setting'], r['model'], r['label'], r['images_per_sec'], r['step_time_ms'],
            '%.3f' % ratio if ratio else ''))
    common.write_records(results, FLAGS.result_file)


if __name__ == '__main__':
    define_flags()
    app.run(main)

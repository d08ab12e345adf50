"""Input pipeline figures: RecordInput vs tf.data vs synthetic data, and software pipelining.

Throughput study, per setting (224x224 ResNet preprocessing; a small-image setting): images/sec
the RecordInput and tf.data pipelines deliver alone (--input_only), and training images/sec of
the setting's model on synthetic data (compute alone), RecordInput and tf.data.

Pipelining study, for a model whose compute time is close to its input time (lenet at 16x16
fed from 256x256 JPEGs): the host has one core for input and one for compute (the CPU analogue of host input feeding an accelerator).
Input time is the input-only step on one thread, compute time the synthetic-data step on one
thread; the trained step runs on two threads without and with software pipelining
(--staged_input). Pipelined should cost max(input, compute), within 10%, not their sum.
RecordInput's preprocessing shares the session's two threads with compute; tf.data's runs on
its own private thread.

Data sets are generated (tfhp.data.synthetic, JPEG) under --data_root unless they exist.

  python experiments/input_bench.py                                # full figures
  python experiments/input_bench.py --num_batches=3 --num_examples_scale=0.1   # smoke run
  python experiments/input_bench.py --settings= --num_batches=100      # pipelining study only
"""
import collections
import os
import tempfile

from absl import app
from absl import flags

from experiments import common
from tfhp import benchmark
from tfhp import compat
from tfhp import config as config_lib
from tfhp.data import synthetic

# name: (model, output image size, stored image size, batch size, training examples)
SETTINGS = {
    'resnet224': ('resnet50', 224, 256, 32, 512),
    'small32': ('lenet', 32, 40, 64, 4096),
    # lenet at 16x16 computes about as long as decoding and cropping 256x256 JPEGs takes
    # (41 vs 41 ms per 64 images, each on one core of the 2-core development box).
    'pipelining': ('lenet', 16, 256, 64, 1024),
}
FLAGS = flags.FLAGS

# How long and on how much data every measurement runs.
Options = collections.namedtuple('Options', ['num_batches', 'num_warmup_batches',
                                             'num_examples_scale', 'data_root'])


def define_flags():
    """Defines the script's flags (only when run as a script, so tests can import it)."""
    flags.DEFINE_list('settings', list(SETTINGS), 'Throughput settings to measure.')
    flags.DEFINE_string('pipelining_setting', 'pipelining', 'Setting of the pipelining study.')
    flags.DEFINE_integer('num_batches', 30, 'Timed steps per measurement.')
    flags.DEFINE_integer('num_warmup_batches', 5, 'Untimed steps per measurement.')
    flags.DEFINE_float('num_examples_scale', 1.0, 'Scale the generated data sets.')
    flags.DEFINE_string('data_root', os.path.join(tempfile.gettempdir(), 'tfhp_input_bench'),
                        'Where generated data sets live.')
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


def measure(options, setting, label, real=True, threads=(0, 0), **data):
    """One benchmark.run of a setting; returns its JSON record."""
    model, image_size, _, batch_size, _ = SETTINGS[setting]
    cfg = config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name=model, batch_size=batch_size,
                                     image_size=image_size, num_classes=10),
        device=config_lib.DeviceConfig(num_inter_threads=threads[0],
                                       num_intra_threads=threads[1]),
        run=config_lib.RunConfig(num_batches=options.num_batches,
                                 num_warmup_batches=options.num_warmup_batches),
        data=config_lib.DataConfig(data_dir=data_dir(setting, options) if real else None,
                                   **data))
    result = benchmark.run(cfg, log=lambda _: None)
    return {'study': 'input_bench', 'setting': setting, 'label': label,
            'model': result['model'], 'batch_size': batch_size, 'image_size': image_size,
            'images_per_sec': result['images_per_sec'],
            'step_time_ms': result['step_time_ms']['p50'], 'threads': list(threads),
            'data': cfg.to_dict()['data']}


def throughput(options, setting):
    """Input-only and training images/sec of one setting."""
    return [measure(options, setting, 'input RecordInput', input_only=True),
            measure(options, setting, 'input tf.data', input_only=True, use_datasets=True),
            measure(options, setting, 'train synthetic', real=False),
            measure(options, setting, 'train RecordInput'),
            measure(options, setting, 'train tf.data', use_datasets=True)]


def pipelining(options, setting):
    """Input, compute, sequential and pipelined step times, per pipeline."""
    compute = measure(options, setting, 'compute (1 thread)', real=False, threads=(1, 1))
    records = [compute]
    # RecordInput's preprocessing runs on the session's threads: two, shared with compute.
    # tf.data's runs on one private thread; the session's one thread computes.
    for name, data, threads in (
            ('RecordInput', {}, (2, 1)),
            ('tf.data', dict(use_datasets=True, datasets_num_private_threads=1), (1, 1))):
        one_core = measure(options, setting, '%s input (1 thread)' % name, threads=(1, 1),
                           input_only=True, **data)
        bound = max(one_core['step_time_ms'], compute['step_time_ms'])
        total = one_core['step_time_ms'] + compute['step_time_ms']
        records.append(one_core)
        for kind, staged in (('sequential', False), ('pipelined', True)):
            record = measure(options, setting, '%s %s (%d+%d threads)' % (
                name, kind, threads[0], 1 if data else 0), threads=threads,
                             staged_input=staged, **data)
            record['ratio_to_max_input_compute'] = record['step_time_ms'] / bound
            record['ratio_to_sum_input_compute'] = record['step_time_ms'] / total
            records.append(record)
    return records


def main(_):
    compat.enable_graph_mode()
    options = Options(FLAGS.num_batches, FLAGS.num_warmup_batches, FLAGS.num_examples_scale,
                      FLAGS.data_root)
    results = [r for s in FLAGS.settings for r in throughput(options, s)]
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

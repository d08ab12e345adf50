"""tfhp against the reference benchmark (tf_cnn_benchmarks) on the same settings, alternately.

The reference is not a dependency: give the path of its `tf_cnn_benchmarks.py` on disk
(--reference); without it only tfhp runs. Each row is one model and batch size (synthetic
data) or one input path on real records (--data_dir: RecordInput, tf.data); in every round
the row runs tfhp and the reference one after the other, each a process of its own, the order
swapped from round to round so neither always runs on a warmer machine. The ratio
tfhp / reference is taken within each round; cells are median [min-max] over the rounds
(experiments/stats.py), `*` where every round's ratio is on one side of 1 and there are
enough rounds for that to mean something (5: a sign test).

Both take the same flags: --model, --batch_size, --num_batches, --num_warmup_batches,
--device=cpu, --data_format, --tf_random_seed, 1001 classes (the reference's ImageNet, its
default data set even for synthetic data; tfhp's --num_classes=1001) and, for real data,
--data_dir and --use_datasets (the reference told --data_name=imagenet); each program keeps
its own defaults for everything else, as a user running either would.

--kernel_steps=N adds, per row, one more untimed run of each program with ONEDNN_VERBOSE=1 and
the comparison of the oneDNN kernels they executed (tfhp.profiling.onednn_log): where the two
ran the same problems at the same median times, their step times differ outside the kernels.

  python -m experiments.vs_reference --reference=~/benchmarks/scripts/tf_cnn_benchmarks/tf_cnn_benchmarks.py
  python -m experiments.vs_reference --reference=... --models=trivial:32,resnet50:8 --rounds=3
  python -m experiments.vs_reference --reference=... --models= --data_dir=/data/imagenet_tfr
  python -m experiments.vs_reference --reference=... --models=resnet50:8 --kernel_steps=4
"""
import os
import re
import subprocess
import sys

from absl import app
from absl import flags

from experiments import common
from experiments import frame
from experiments import stats
from tfhp.profiling import onednn_log

FLAGS = flags.FLAGS
FIGURES = ('tfhp_images_per_sec', 'reference_images_per_sec', 'ratio')
# The reference's summary line (tf_cnn_benchmarks' benchmark_cnn prints it after the run).
_TOTAL = re.compile(r'^total images/sec: ([0-9.]+)', re.MULTILINE)
# Real-data rows: name -> the flag both programs read it through.
INPUTS = {'RecordInput': ['--use_datasets=false'], 'tf.data': ['--use_datasets=true']}


def define_flags():
    """Defines the study's own flags, the common ones being the frame's (only when run as a
    script, so tests can import it)."""
    flags.DEFINE_string('reference', None, 'Path of tf_cnn_benchmarks.py; without it only '
                        'tfhp runs.')
    flags.DEFINE_list('models', ['trivial:32', 'lenet:32', 'alexnet:16', 'inception3:8',
                                 'vgg16:4', 'resnet50:8'],
                      'Synthetic-data rows, MODEL:BATCH_SIZE (empty: none).')
    flags.DEFINE_string('data_dir', None, 'Real-data rows read these ImageNet-format '
                        'TFRecords (train-*), once per --inputs entry.')
    flags.DEFINE_string('data_model', 'trivial:32', 'MODEL:BATCH_SIZE of the real-data rows '
                        '(trivial: input-bound).')
    flags.DEFINE_list('inputs', list(INPUTS), 'Real-data input paths: %s.' % ', '.join(INPUTS))
    flags.DEFINE_string('data_format', 'NHWC', 'NHWC or NCHW, for both.')
    flags.DEFINE_float('timeout_s', 900.0, 'Bound on each run.')
    flags.DEFINE_integer('kernel_steps', 0, 'After each row\'s rounds, run both programs '
                         'once more for this many untimed steps with ONEDNN_VERBOSE=1 and '
                         'compare the oneDNN kernels they ran (0: not).')


def parse_model(spec):
    """('resnet50', 8) from 'resnet50:8'.

    Raises:
      ValueError: not MODEL:BATCH_SIZE with a positive batch size.
    """
    model, sep, batch = spec.partition(':')
    if not sep or not model or not batch.isdigit() or int(batch) < 1:
        raise ValueError('%r: expected MODEL:BATCH_SIZE, e.g. resnet50:8' % spec)
    return model, int(batch)


class Row:
    """One comparison: a label, the flags both programs take, each one's own (for real data
    the reference is told ImageNet, tfhp its 1001 classes), and the row's input."""

    def __init__(self, label, model, batch_size, shared, tfhp_only=(), reference_only=(),
                 data=None):
        self.label, self.model, self.batch_size = label, model, batch_size
        self.shared = ['--model=%s' % model, '--batch_size=%d' % batch_size] + list(shared)
        self.tfhp_only, self.reference_only = list(tfhp_only), list(reference_only)
        self.data = data

    def args(self, seed):
        """tfhp's flags for round `seed`."""
        return self.shared + ['--tf_random_seed=%d' % seed] + self.tfhp_only

    def reference_args(self, seed):
        """The reference's flags for round `seed`."""
        return self.shared + ['--tf_random_seed=%d' % seed] + self.reference_only


def rows(models, data_dir, data_model, inputs, data_format, num_batches, num_warmup_batches):
    """The Rows of the flags: one per synthetic model, then one per real-data input."""
    common_args = ['--device=cpu', '--data_format=%s' % data_format,
                   '--num_batches=%d' % num_batches,
                   '--num_warmup_batches=%d' % num_warmup_batches]
    # tfhp's logits match the reference's 1001 ImageNet classes whatever the data holds.
    classes = ['--num_classes=1001']
    made = [Row('%s b%d synthetic' % parse_model(m), *parse_model(m), shared=common_args,
                tfhp_only=classes) for m in models]
    if data_dir:
        model, batch = parse_model(data_model)
        made += [Row('%s b%d %s' % (model, batch, name), model, batch,
                     common_args + ['--data_dir=%s' % data_dir] + INPUTS[name],
                     tfhp_only=classes, reference_only=['--data_name=imagenet'],
                     data=name)
                 for name in inputs]
    return made


def _output(command, timeout_s, cwd=None, env=None):
    """(standard output, None) of a run that exited 0, or (None, why it failed)."""
    environment = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
    environment.update(env or {})
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              env=environment, cwd=cwd)
    except subprocess.TimeoutExpired:
        return None, 'timed out after %g s' % timeout_s
    if proc.returncode:
        tail = ' | '.join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        return None, 'failed (exit status %d): %s' % (proc.returncode, tail)
    return proc.stdout, None


def _reference_command(path, args):
    return [sys.executable, path] + list(args), os.path.dirname(os.path.abspath(path))


def reference_images_per_sec(path, args, timeout_s):
    """(images/sec, None) of one reference run, or (None, why it failed)."""
    command, cwd = _reference_command(path, args)
    out, error = _output(command, timeout_s, cwd)
    if error:
        return None, error
    found = _TOTAL.findall(out)
    if not found:
        return None, 'no "total images/sec" line in its output'
    return float(found[-1]), None


def compare_kernels(row, reference, steps, timeout_s, seed):
    """Runs the row once more per program, `steps` untimed steps with ONEDNN_VERBOSE=1, and
    compares the oneDNN kernels they executed (`tfhp.profiling.onednn_log.compare`).

    Returns:
      {'kernel_ratio': tfhp's summed median time per problem over the reference's, on the
       problems both ran, 'kernel_problems': how many, 'kernel_problems_only_tfhp' and
       'kernel_problems_only_reference'}, or {'kernel_error': why not}.
    """
    verbose = {'ONEDNN_VERBOSE': '1'}
    steps_flag = ['--num_batches=%d' % steps]  # absl: the last value of a flag wins
    tfhp_out, error = _output([sys.executable, '-m', 'tfhp'] + row.args(seed) + steps_flag,
                              timeout_s, env=verbose)
    if error:
        return {'kernel_error': 'tfhp: %s' % error}
    command, cwd = _reference_command(reference, row.reference_args(seed) + steps_flag)
    reference_out, error = _output(command, timeout_s, cwd, env=verbose)
    if error:
        return {'kernel_error': 'reference: %s' % error}
    runs = [onednn_log.parse(out.splitlines()) for out in (tfhp_out, reference_out)]
    if not all(runs):
        return {'kernel_error': 'no oneDNN executions logged (not a oneDNN build?)'}
    rows = onednn_log.compare(*runs)
    summed = onednn_log.total(rows)
    return {'kernel_ratio': onednn_log.common_ratio(rows), 'kernel_problems': summed.common,
            'kernel_problems_only_tfhp': summed.only_a,
            'kernel_problems_only_reference': summed.only_b}


def measure(row, reference, timeout_s, seed):
    """One round of a row: tfhp and the reference (if given), in the round's order."""
    record = {'study': 'vs_reference', 'label': row.label, 'model': row.model,
              'batch_size': row.batch_size, 'data': row.data or 'synthetic', 'seed': seed,
              'args': row.args(seed)}
    errors = []

    def run_tfhp():
        outcome = common.run_tfhp(row.args(seed), timeout_s)
        if outcome.error:
            errors.append('tfhp: %s' % outcome.error)
        else:
            record['tfhp_images_per_sec'] = outcome.result['images_per_sec']

    def run_reference():
        ips, error = reference_images_per_sec(reference, row.reference_args(seed), timeout_s)
        if error:
            errors.append('reference: %s' % error)
        else:
            record['reference_images_per_sec'] = ips

    order = [run_tfhp, run_reference] if reference else [run_tfhp]
    for run in (order if seed % 2 == 0 else order[::-1]):
        run()
    if errors:
        record['error'] = '; '.join(errors)
    if record.get('tfhp_images_per_sec') and record.get('reference_images_per_sec'):
        record['ratio'] = record['tfhp_images_per_sec'] / record['reference_images_per_sec']
    return record


def mark_ratios(records):
    """Marks each row's ratio 'higher' or 'lower' where every round's is on that side of 1 and
    chance would put all n there at most stats.ALPHA of the time (a sign test: 2 / 2^n, so
    5 rounds at least); else 'within noise'."""
    for record in records:
        ratio = record.get('ratio')
        if not stats.is_summary(ratio):
            continue
        values = [v for v in ratio['values'] if v is not None]
        side = 'within noise'
        if len(values) == ratio['n'] and 2.0 / 2 ** len(values) <= stats.ALPHA:
            if min(values) > 1:
                side = 'higher'
            elif max(values) < 1:
                side = 'lower'
        record.setdefault('vs_reference', {})['ratio'] = side
    return records


TABLE = [('row', 'label', None), ('tfhp images/s', 'tfhp_images_per_sec', '%.1f'),
         ('reference images/s', 'reference_images_per_sec', '%.1f'),
         ('tfhp / reference', 'ratio', '%.3f')]
# With --kernel_steps: the oneDNN kernels of one more run each (see compare_kernels).
KERNEL_COLUMNS = [('kernels tfhp / reference', 'kernel_ratio', '%.3f'),
                  ('problems both ran', 'kernel_problems', '%d'),
                  ('only tfhp', 'kernel_problems_only_tfhp', '%d'),
                  ('only reference', 'kernel_problems_only_reference', '%d')]


def print_report(records):
    """The table (with the kernels' columns under --kernel_steps), its legend, and each failed
    run and kernel comparison."""
    common.print_table(records, TABLE + (KERNEL_COLUMNS if FLAGS.kernel_steps else []))
    if any(stats.is_summary(r.get('ratio')) for r in records):
        print('*: every round\'s ratio on the same side of 1, in 5 rounds or more (a sign test: '
              'chance <= %.2f were there no difference)' % stats.ALPHA)
    for record in records:
        for run in record.get('runs', []):
            if run.get('error'):
                print('%s, seed %d: %s' % (record['label'], run['seed'], run['error']))
        if record.get('kernel_error'):
            print('%s, kernels: %s' % (record['label'], record['kernel_error']))


def study():
    """Every row --repeats (--rounds) times, alternately with the reference; reported.

    Returns:
      2 (and why, on stderr) for a missing --reference or --data_dir or a wrong row; else 0.
    """
    if FLAGS.reference and not os.path.isfile(os.path.expanduser(FLAGS.reference)):
        print('vs_reference: --reference=%s: no such file (the path of tf_cnn_benchmarks.py)'
              % FLAGS.reference, file=sys.stderr)
        return 2
    if FLAGS.data_dir and not os.path.isdir(FLAGS.data_dir):
        print('vs_reference: --data_dir=%s: no such directory' % FLAGS.data_dir,
              file=sys.stderr)
        return 2
    try:
        common.check_choices('inputs', FLAGS.inputs, INPUTS)
        made = rows([m for m in FLAGS.models if m], FLAGS.data_dir, FLAGS.data_model,
                    FLAGS.inputs, FLAGS.data_format, FLAGS.steps, FLAGS.warmup_steps)
    except (ValueError, app.UsageError) as e:
        print('vs_reference: %s' % e, file=sys.stderr)
        return 2
    reference = os.path.expanduser(FLAGS.reference) if FLAGS.reference else None

    def finish(records):
        if reference and FLAGS.kernel_steps:
            for row, record in zip(made, records):
                record.update(compare_kernels(row, reference, FLAGS.kernel_steps,
                                              FLAGS.timeout_s, FLAGS.seed))
        return mark_ratios(records)
    frame.run([lambda seed, row=row: measure(row, reference, FLAGS.timeout_s, seed)
               for row in made], FIGURES, print_report, finish=finish)
    return 0


if __name__ == '__main__':
    define_flags()
    # --repeats has its old name --rounds here: every round runs both programs.
    frame.main(study, steps=50, warmup_steps=5, repeats=2)

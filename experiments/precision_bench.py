"""Compute settings against float32 on synthetic data: XLA (--xla_compile, --xla) and 16-bit
compute (float16 with a fixed and an automatic loss scale, bfloat16), per model.

Each (model, setting) is its own `python -m tfhp` process; the settings of a model alternate
for --repeats (--rounds) rounds and the median images/sec is reported, with the speed-up over
float32 without XLA. A setting the build refuses shows tfhp's reason. float16 runs take at most
--slow_num_batches timed steps: on CPUs whose build has no fast float16 kernels a step takes
seconds.

  python -m experiments.precision_bench                     # CPU defaults, ~15 minutes
  python -m experiments.precision_bench --models=lenet --settings=float32,bfloat16
"""
import statistics

from absl import flags

from experiments import common
from experiments import frame

# Per model: its flags (CIFAR-10 nets need the CIFAR-10 stand-in) and image size.
MODELS = {
    'trivial': ['--model=trivial', '--image_size=32'],
    'lenet': ['--model=lenet', '--image_size=28'],
    'resnet20': ['--model=resnet20', '--data_name=cifar10'],
}
SETTINGS = {
    'float32': [],
    'xla_compile': ['--xla_compile'],
    'xla': ['--xla'],
    'float16': ['--use_fp16'],
    'float16_auto_scale': ['--use_fp16', '--fp16_enable_auto_loss_scale'],
    'bfloat16': ['--compute_dtype=bfloat16'],
}
SLOW = ('float16', 'float16_auto_scale')

FLAGS = flags.FLAGS


def define_flags():
    """Defines the study's own flags (the common ones are the frame's).

    Called only when run as a script: importing the module (e.g. from tests, beside other
    experiments that define flags of the same names) defines none.
    """
    flags.DEFINE_list('models', sorted(MODELS), 'Models to measure.')
    flags.DEFINE_list('settings', list(SETTINGS), 'Settings to measure.')
    flags.DEFINE_integer('batch_size', 16, 'Per-device batch size.')
    flags.DEFINE_integer('slow_num_batches', 4, 'Timed steps of float16 runs (at most).')


def arguments(model, setting, batch_size, num_batches, slow_num_batches, num_warmup_batches):
    """The tfhp flags of one measurement."""
    if setting in SLOW:
        num_batches = min(num_batches, slow_num_batches)
        num_warmup_batches = min(num_warmup_batches, 1)
    return MODELS[model] + SETTINGS[setting] + [
        '--batch_size=%d' % batch_size, '--num_batches=%d' % num_batches,
        '--num_warmup_batches=%d' % num_warmup_batches, '--display_every=1000']


def measure(models, settings, rounds, **sizes):
    """One record per (model, setting): median images/sec over the rounds, or the error."""
    records = []
    for model in models:
        rates = {s: [] for s in settings}
        errors = {}
        for _ in range(rounds):
            for setting in settings:
                if setting in errors:
                    continue
                outcome = common.run_tfhp(arguments(model, setting, **sizes))
                if outcome.error:
                    errors[setting] = outcome.error
                else:
                    rates[setting].append(outcome.result['images_per_sec'])
        base = statistics.median(rates['float32']) if rates.get('float32') else None
        for setting in settings:
            record = {'model': model, 'setting': setting}
            if setting in errors:
                record['error'] = errors[setting]
            else:
                record['images_per_sec'] = statistics.median(rates[setting])
                record['rounds'] = rates[setting]
                if base:
                    record['speedup'] = record['images_per_sec'] / base
            records.append(record)
    return records


TABLE = [('model', 'model', None), ('setting', 'setting', None),
         ('images/sec', 'images_per_sec', '%.1f'), ('vs float32', 'speedup', '%.2fx'),
         ('error', 'error', None)]


def study():
    """Every setting of every model, measured and reported."""
    common.check_choices('models', FLAGS.models, MODELS)
    common.check_choices('settings', FLAGS.settings, SETTINGS)
    records = measure(FLAGS.models, FLAGS.settings, FLAGS.repeats, batch_size=FLAGS.batch_size,
                      num_batches=FLAGS.steps, slow_num_batches=FLAGS.slow_num_batches,
                      num_warmup_batches=FLAGS.warmup_steps)
    frame.report(records, TABLE)


if __name__ == '__main__':
    define_flags()
    # --repeats (--rounds): alternations of a model's settings; nothing here is seeded.
    frame.main(study, steps=40, warmup_steps=5, repeats=2, seed=None)

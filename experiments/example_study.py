"""A study on the frame (experiments/frame.py): images/sec of `python -m tfhp` per model and batch.

  python -m experiments.example_study --models=trivial,lenet --batch_sizes=8,32 --steps=20
"""
import functools

from absl import flags

from experiments import common
from experiments import frame

FLAGS = flags.FLAGS
FIGURES = ('images_per_sec',)
TABLE = [('model', 'model', None), ('batch', 'batch_size', '%d'),
         ('images/s', 'images_per_sec', '%.1f')]


def measure(model, batch_size, seed):
    """One tfhp run in a process of its own; its record."""
    outcome = common.run_tfhp([
        '--model=' + model, '--batch_size=%d' % batch_size, '--tf_random_seed=%d' % seed,
        '--num_batches=%d' % FLAGS.steps, '--num_warmup_batches=%d' % FLAGS.warmup_steps])
    if outcome.error:
        raise RuntimeError('%s, batch %d: %s' % (model, batch_size, outcome.error))
    return {'study': 'example', 'model': model, 'batch_size': batch_size, 'seed': seed,
            'images_per_sec': outcome.result['images_per_sec']}


def study():
    """Every model at every batch size, --repeats times in rounds."""
    frame.run([functools.partial(measure, m, int(b))
               for m in FLAGS.models for b in FLAGS.batch_sizes], FIGURES, TABLE)


if __name__ == '__main__':
    flags.DEFINE_list('models', ['trivial', 'lenet'], 'Models.')
    flags.DEFINE_list('batch_sizes', ['8', '32'], 'Batch sizes.')
    frame.main(study, steps=20, warmup_steps=2)

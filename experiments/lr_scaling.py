"""Linear learning-rate scaling with warm-up (Goyal et al. 2017) against one tower, at equal
images.

Goyal et al., "Accurate, Large Minibatch SGD: Training ImageNet in 1 Hour", 2017: with k times
the batch, k times the learning rate and a gradual warm-up (5 of 90 epochs), ResNet-50 reached
the small batch's error (23.74% +-0.09 at 8k against 23.60% +-0.12 at 256, table 2a); without
the warm-up the large batch fell short early in training. Here, on the learnable synthetic set
of the convergence studies (experiments/convergence.py), rows of in-graph synchronous towers:

  one_tower        1 tower, --learning_rate, --num_steps steps
  linear_warmup    --towers towers, k x the rate, --num_steps / k steps (the same images), the
                   rate rising linearly from 0 over --warmup_epochs (--num_learning_rate_warmup_epochs)
  linear           the same without the warm-up
  unscaled         --towers towers at the one tower's rate, --num_steps / k steps

Each row runs --repeats times, repeat r with --tf_random_seed + r (its own seed: initial weights,
data order; add --tfhp_flags=--deterministic for repeats of one seed that reproduce exactly);
figures are median [min-max], '*' where a row's range is apart from one_tower's
(experiments/stats.py). Images to target count every tower's batch: at equal images the rows
saw the same epochs.

  python -m experiments.lr_scaling --result_file=lr_scaling.jsonl   # 3 rows x 3 repeats
  python -m experiments.lr_scaling --rows=one_tower,linear_warmup,unscaled --towers=8
"""
import dataclasses

from absl import flags

from experiments import common
from experiments import convergence
from experiments import frame
from experiments import presets
from tfhp import modes
from tfhp import provenance
from tfhp.data import info as info_lib

ROWS = ('one_tower', 'linear_warmup', 'linear', 'unscaled')
FLAGS = flags.FLAGS


def row_run(row, options, towers, warmup_epochs):
    """(combination, options, extra tfhp flags) of one row: the one tower's options scaled to
    `towers` towers at the same images."""
    combo = presets.combo(modes.IN_GRAPH, synchronous=True)
    if row == 'one_tower':
        return combo, dataclasses.replace(options, num_replicas=1), []
    rate = options.learning_rate * (1 if row == 'unscaled' else towers)
    scaled = dataclasses.replace(
        options, num_replicas=towers, learning_rate=rate,
        num_steps=max(1, options.num_steps // towers),
        eval_every=max(1, options.eval_every // towers))
    extra = (['--num_learning_rate_warmup_epochs=%g' % warmup_epochs]
             if row == 'linear_warmup' else [])
    return combo, scaled, extra


def run(rows, options, data_dir, work_dir, towers, warmup_epochs, extra_flags=()):
    """One `convergence` record (summaries over options.repeats) per row, labelled with it."""
    runs = [row_run(r, options, towers, warmup_epochs) for r in rows]
    records = convergence.run_repeats(runs, options, data_dir, work_dir, extra_flags,
                                      labels=list(rows))
    return [dict(record, study='lr_scaling', row=row, towers=1 if row == 'one_tower' else towers,
                 learning_rate=run_options.learning_rate,
                 warmup_epochs=warmup_epochs if row == 'linear_warmup' else 0.0)
            for record, row, (_, run_options, _) in zip(records, rows, runs)]


TABLE = [('row', 'label', None)] + convergence.TABLE[1:5]


def study():
    """The rows of --rows, trained, evaluated and reported against one tower."""
    common.check_choices('rows', FLAGS.rows, ROWS)
    options, data_dir = convergence.study_setup()
    stamp = provenance.stamp()  # the commit that ran, not the one at the end
    records = run(FLAGS.rows, options, data_dir, FLAGS.work_dir, FLAGS.towers,
                  FLAGS.warmup_epochs, FLAGS.tfhp_flags)
    epochs = (options.num_steps * options.batch_size /
              info_lib.load(data_dir).num_examples['train'])
    heading = ('in-graph sync, 1 tower vs %d, %d images of %d a tower (%.1f epochs), warm-up '
               '%g epochs, target accuracy %.2f, %d repeats' % (
                   FLAGS.towers, options.num_steps * options.batch_size, options.batch_size,
                   epochs, FLAGS.warmup_epochs, options.target_accuracy, options.repeats))
    convergence.report(records, options, heading, table=TABLE, reference=next(
        (r for r in records if r['row'] == 'one_tower'), None))
    common.write_records(records, FLAGS.result_file)
    frame.figure(*convergence.figure(records, options, heading, stamp))


if __name__ == '__main__':
    flags.DEFINE_list('rows', list(ROWS[:3]), 'Rows to compare: %s.' % ', '.join(ROWS))
    flags.DEFINE_integer('towers', 4, 'Towers (virtual CPU devices) of the scaled rows.')
    flags.DEFINE_float('warmup_epochs', 1.0, 'linear_warmup: epochs of the linear warm-up.')
    # One tower: 600 steps of 32 (4.8 epochs of the 4,000 images); four towers 150 steps.
    frame.main(study, **convergence.define_flags(
        convergence.Options(num_replicas=1, num_steps=600, eval_every=60,
                            target_accuracy=0.7), 'tfhp_lr_scaling'))

"""An ensemble of the top k of N trained members against those members (#28).

Each repeat trains --members models on the learnable synthetic set (`tfhp.data.synthetic`),
each its own `python -m tfhp` run: member m with seed 100 * seed + m (its initial weights and
data order) and learning rate --learning_rates[m % len]. The k (--top_k) members with the best
top-1 accuracy on the data set's validation set are ensembled (`tfhp.ensemble`: one graph,
member i on virtual CPU i, the mean of their softmax probabilities), and the ensemble and each
of its members are evaluated on the same test set: drawn by the same generator with another
seed, seen neither by training nor by the choice (choosing and comparing on one set would
favour the members chosen for scoring high on it).

Rows: the ensemble, its members by validation rank, the best of them on the test set (chosen
after the fact: the hardest comparison) and their mean; each figure median [min-max] over the
repeats, and the ensemble's gain over the best and over the mean member, repeat by repeat.

  python -m experiments.ensemble --members=5 --top_k=3 --steps=300 --repeats=5
"""
import os
import shutil
import tempfile

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import flags  # pylint: disable=g-import-not-at-top,wrong-import-position

from experiments import common
from experiments import frame
from experiments import stats
from tfhp import compat
from tfhp import config as config_lib
from tfhp import ensemble
from tfhp.data import info as info_lib
from tfhp.data import synthetic

FLAGS = flags.FLAGS
# The test set's generator seed: any but the training set's (0).
TEST_SEED = 1


def _figure_names(top_k):
    names = ['ensemble', 'best_member', 'mean_member'] + ['member_%d' % (r + 1)
                                                          for r in range(top_k)]
    return ['%s_top_%d' % (n, k) for n in names for k in ensemble.TOP_K] + [
        'gain_over_best', 'gain_over_mean']


def _eval_config(data_dir, seed):
    """The members' flags as an --eval run takes them, reading the data set in order."""
    return config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name=FLAGS.model, image_size=FLAGS.image_size),
        data=config_lib.DataConfig(data_dir=data_dir, use_datasets=True, staged_input=False),
        run=config_lib.RunConfig(eval=True, train_dir=os.devnull, tf_random_seed=seed),
        evaluation=config_lib.EvalConfig(eval_batch_size=FLAGS.eval_batch_size))


def _train(member_seed, rate, data_dir, train_dir):
    """One member, trained by `python -m tfhp`; its checkpoint."""
    outcome = common.run_tfhp([
        '--model=' + FLAGS.model, '--image_size=%d' % FLAGS.image_size,
        '--batch_size=%d' % FLAGS.batch_size, '--optimizer=momentum',
        '--learning_rate=%g' % rate, '--data_dir=' + data_dir, '--train_dir=' + train_dir,
        '--num_batches=%d' % FLAGS.steps, '--num_warmup_batches=0',
        '--display_every=%d' % FLAGS.steps, '--tf_random_seed=%d' % member_seed,
        # Random crops of 16-pixel images cut too much of the shape away to learn quickly.
        '--random_crop_flip=false'], FLAGS.timeout_s)
    if outcome.error:
        raise RuntimeError('member seed %d: %s' % (member_seed, outcome.error))
    return os.path.join(train_dir, 'model.ckpt-%d' % outcome.result['global_step'])


def measure(data_dir, test_dir, seed):
    """One repeat: train, choose on validation, compare on test; its record."""
    rates = [float(r) for r in FLAGS.learning_rates]
    work = tempfile.mkdtemp(prefix='ensemble_', dir=FLAGS.work_dir)
    try:
        members = [dict(seed=100 * seed + m, learning_rate=rates[m % len(rates)])
                   for m in range(FLAGS.members)]
        paths = [_train(m['seed'], m['learning_rate'], data_dir, os.path.join(work, str(i)))
                 for i, m in enumerate(members)]
        # Every member's validation accuracy, in one pass (an ensemble of them all).
        validation = ensemble.evaluate(ensemble.build(_eval_config(data_dir, seed), paths))
        for member, figures in zip(members, validation['members']):
            member['validation_top_1'] = figures['top_1_accuracy']
        chosen = sorted(range(len(members)), key=lambda m: -members[m]['validation_top_1'])
        chosen = chosen[:FLAGS.top_k]
        test = ensemble.evaluate(ensemble.build(_eval_config(test_dir, seed),
                                                [paths[m] for m in chosen]))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    record = {'study': 'ensemble', 'seed': seed, 'model': FLAGS.model, 'steps': FLAGS.steps,
              'members': members, 'chosen': chosen, 'test_examples': test['num_examples']}
    for name in test['ensemble']:
        k = name.split('_')[1]
        scores = [m[name] for m in test['members']]
        record['ensemble_top_%s' % k] = test['ensemble'][name]
        record['best_member_top_%s' % k] = max(scores)
        record['mean_member_top_%s' % k] = sum(scores) / len(scores)
        for rank, score in enumerate(scores):
            record['member_%d_top_%s' % (rank + 1, k)] = score
    record['gain_over_best'] = record['ensemble_top_1'] - record['best_member_top_1']
    record['gain_over_mean'] = record['ensemble_top_1'] - record['mean_member_top_1']
    return record


def table(records):
    """A row per predictor (top-1 and top-5 on the test set), then the gains."""
    [record] = records
    rows = [('ensemble of %d' % FLAGS.top_k, 'ensemble')] + [
        ('member %d (validation rank)' % (r + 1), 'member_%d' % (r + 1))
        for r in range(FLAGS.top_k)] + [('best member on test', 'best_member'),
                                         ('mean of the members', 'mean_member')]
    common.print_table(
        [{'row': label, 'top1': record.get(key + '_top_1'), 'top5': record.get(key + '_top_5')}
         for label, key in rows],
        [('predictor', 'row', None), ('test top-1', 'top1', '%.3f'),
         ('test top-5', 'top5', '%.3f')])
    above = sum(g > 0 for g in record['gain_over_best']['values'])
    print('ensemble - best member, top-1: %s (above it in %d of %d repeats); ensemble - mean '
          'member: %s' % (stats.cell(record['gain_over_best'], '%+.3f'), above,
                          record['repeats'], stats.cell(record['gain_over_mean'], '%+.3f')))


def test_set(work_dir, image_size, num_examples):
    """The test set under work_dir, made on first use: the training set's generator with
    another seed; its validation subset is the test set (its training subset is unused)."""
    directory = os.path.join(work_dir, 'test%d_%d' % (image_size, num_examples))
    if not os.path.exists(os.path.join(directory, info_lib.INFO_FILE)):
        synthetic.generate(directory, image_size=image_size, train_examples=10,
                           validation_examples=num_examples, train_shards=1,
                           validation_shards=1, seed=TEST_SEED)
    return directory


def study():
    """--repeats repeats of: train --members, ensemble the --top_k, compare on the test set."""
    compat.enable_graph_mode()
    os.makedirs(FLAGS.work_dir, exist_ok=True)
    data_dir = common.learnable_data(FLAGS.work_dir, FLAGS.image_size,
                                     validation_examples=FLAGS.validation_examples)
    test_dir = test_set(FLAGS.work_dir, FLAGS.image_size, FLAGS.test_examples)
    frame.run([lambda seed: measure(data_dir, test_dir, seed)], _figure_names(FLAGS.top_k),
              table)


if __name__ == '__main__':
    flags.DEFINE_integer('members', 5, 'Members trained per repeat.')
    flags.DEFINE_integer('top_k', 3, 'Members ensembled: the best on the validation set.')
    flags.DEFINE_list('learning_rates', ['0.02', '0.05', '0.1'], 'Member m trains with rate '
                      'm mod their number (momentum 0.9).')
    flags.DEFINE_string('model', 'lenet', 'Model of every member.')
    flags.DEFINE_integer('image_size', 16, 'Image size of the data sets.')
    flags.DEFINE_integer('batch_size', 32, 'Training batch.')
    flags.DEFINE_integer('eval_batch_size', 100, 'Must divide --validation_examples and '
                         '--test_examples.')
    flags.DEFINE_integer('validation_examples', 500, 'Validation set (the choice).')
    flags.DEFINE_integer('test_examples', 1000, 'Test set (the comparison).')
    flags.DEFINE_float('timeout_s', 600.0, 'Bound on each member\'s training.')
    flags.DEFINE_string('work_dir', os.path.join(tempfile.gettempdir(), 'tfhp_ensemble'),
                        'Generated data sets and checkpoints.')
    frame.main(study, steps=300, repeats=5, seed=1)

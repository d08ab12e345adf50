"""Time to accuracy of in-graph and between-graph training, sync or async: what
experiments/four_combos.py and experiments/stale_gradients.py share.

A row is a combination (`presets.COMBOS`) with its Options and extra tfhp flags. It trains the
same CNN on the same learnable data set (`tfhp.data.synthetic`), --num_steps batches of
--batch_size per replica, as one `python -m tfhp` run or one `tfhp.launch` job, checkpointing
every --eval_every steps per replica; every checkpoint is then evaluated on the whole
validation set. `run_repeats` runs each row --repeats times in rounds; `report` prints the
table and the conclusion, `figure` gives the accuracy curves' data (`frame.figure` keeps and
draws it).
"""
import dataclasses
import functools
import glob
import os
import re
import shutil
import tempfile

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import flags  # pylint: disable=g-import-not-at-top
import tensorflow.compat.v1 as tf

from experiments import common
from experiments import presets
from experiments import stats
from tfhp.runner import build
from tfhp import compat
from tfhp import config as config_lib
from tfhp.data import info as info_lib
from tfhp.replication import staleness

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Options:
    """One study's settings (the script's flags).

    The defaults let every combination reach the target in every repeat with room to spare:
    the slowest, between-graph async, reached 0.75 after 27,584-29,184 images of the 32,000 of
    500 steps (3 repeats, seeds 1234-1236), so 800 steps (51,200 images) it is.
    """
    num_replicas: int = 2
    spare_replicas: int = 1
    model: str = 'lenet'
    image_size: int = 16
    batch_size: int = 32
    optimizer: str = 'momentum'
    learning_rate: float = 0.05
    num_steps: int = 800
    eval_every: int = 25
    target_accuracy: float = 0.75
    eval_batch_size: int = 100
    timeout_s: float = 900.0
    repeats: int = 3
    tf_random_seed: int = 1234


def tfhp_flags(combo, options, data_dir, train_dir, seed=None):
    """(number of worker processes, tfhp flags) of one combination (0 workers: one process)."""
    n = options.num_replicas
    common_flags = ['--tf_random_seed=%d' % (options.tf_random_seed if seed is None else seed),
        '--model=%s' % options.model, '--image_size=%d' % options.image_size,
        '--batch_size=%d' % options.batch_size, '--optimizer=%s' % options.optimizer,
        '--learning_rate=%g' % options.learning_rate, '--data_dir=%s' % data_dir,
        '--num_batches=%d' % options.num_steps, '--num_warmup_batches=0',
        '--display_every=%d' % options.num_steps, '--train_dir=%s' % train_dir,
        # Random crops of 16-pixel images cut too much of the shape away to learn quickly.
        '--max_ckpts_to_keep=0', '--random_crop_flip=false']
    try:
        preset = presets.COMBOS[combo]
    except KeyError:
        raise ValueError('unknown combination %r; one of %s' % (
            combo, ', '.join(presets.COMBOS))) from None
    common_flags += preset.args()
    if not preset.cluster:  # one process, a replica per device
        return 0, common_flags + ['--num_devices=%d' % n,
                                  '--save_model_steps=%d' % options.eval_every] + (
                                      ['--measure_staleness'] if preset.synchronous else [])
    # Checkpoints every eval_every batches per replica; the chief counts global steps, which
    # asynchronous workers advance one per batch each.
    if not preset.synchronous:
        return n, common_flags + ['--save_model_steps=%d' % (options.eval_every * n)]
    return n + options.spare_replicas, common_flags + [
        '--replicas_to_aggregate=%d' % n, '--save_model_steps=%d' % options.eval_every]


def _checkpoint_steps(train_dir):
    paths = glob.glob(os.path.join(train_dir, 'model.ckpt-*.index'))
    return sorted(int(re.search(r'-(\d+)\.index$', p).group(1)) for p in paths)


def _chief_seconds(chief, step):
    """Timed seconds of the chief's clock until global step `step` was first reached."""
    for end, seen in zip(chief['end_times'], chief['global_steps']):
        if seen >= step:
            return end - chief['timed_start_time']
    return chief['end_times'][-1] - chief['timed_start_time']


def train(combo, options, data_dir, train_dir, extra_flags=(), seed=None):
    """Runs one combination; returns (its figures, [(global step, seconds)] of checkpoints).

    Raises:
      RuntimeError: the run failed (the message carries its error).
    """
    num_workers, args = tfhp_flags(combo, options, data_dir, train_dir, seed)
    args += list(extra_flags)
    if not num_workers:
        outcome = common.run_tfhp(args, options.timeout_s)
        if outcome.error:
            raise RuntimeError('%s: %s' % (combo, outcome.error))
        r = outcome.result
        figures = dict(staleness.summary(r), global_steps=r['global_step'],
                       train_time_s=r['wall_time_s'], images_per_sec=r['images_per_sec'],
                       final_loss=r['final_loss'],
                       images_per_update=r['batch_size'] * (
                           1 if 'replica_steps' in r else r['num_devices']))
        return figures, [tuple(c) for c in r['checkpoints']]
    run = common.run_cluster(presets.COMBOS[combo].ps_tasks, num_workers, args,
                             options.timeout_s)
    if run.error:
        raise RuntimeError('%s: %s' % (combo, run.error))
    chief = run.results[('worker', 0)]
    workers = list(run.results.values())
    synchronous = presets.COMBOS[combo].synchronous
    job = common.cluster_figures(run.summary)
    # On the chief's clock (which the checkpoint times use), to the last worker's last step.
    figures = dict(staleness.summary(workers),
                   global_steps=max(w['global_steps'][-1] for w in workers),
                   train_time_s=max(w['end_times'][-1] for w in workers) - chief[
                       'timed_start_time'],
                   images_per_sec=job['images_per_sec'], final_loss=chief.get('final_loss'),
                   dropped_gradients=job['dropped_gradients'],
                   images_per_update=options.batch_size * (
                       options.num_replicas if synchronous else 1))
    # The chief's first checkpoint is not evaluated: it is named after the global step read at
    # session start, but with spare replicas the others may have applied steps before it saves.
    return figures, [(s, _chief_seconds(chief, s)) for s in _checkpoint_steps(train_dir)
                     if s > chief['start_global_step']]


def validation_size(options, data_dir):
    """The validation set's size; ValueError unless --eval_batch_size divides it."""
    num_examples = info_lib.load(data_dir).num_examples['validation']
    if num_examples % options.eval_batch_size:
        raise ValueError('--eval_batch_size=%d does not divide the %d validation examples'
                         % (options.eval_batch_size, num_examples))
    return num_examples


def evaluate(options, data_dir, paths):
    """Top-1 accuracy of each checkpoint on the whole validation set (in this process)."""
    num_examples = validation_size(options, data_dir)
    cfg = config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name=options.model, batch_size=options.eval_batch_size,
                                     image_size=options.image_size),
        data=config_lib.DataConfig(data_dir=data_dir, use_datasets=True, staged_input=False),
        run=config_lib.RunConfig(eval=True, train_dir=os.path.dirname(paths[0]),
                                 num_batches=1, num_warmup_batches=0))
    built = build.build(cfg)
    accuracies = []
    with tf.Session(graph=built.graph, config=built.session_config) as sess:
        sess.run(built.init)
        for path in paths:
            built.saver.restore(sess, path)
            hits = sum(sess.run([built.ops.top1_correct, built.ops.put_ops])[0]
                       for _ in range(num_examples // options.eval_batch_size))
            accuracies.append(float(hits) / num_examples)
    return accuracies


def run_combo(combo, options, data_dir, work_dir, extra_flags=(), label=None, seed=None):
    """Trains one combination once, evaluates its checkpoints; returns its JSON record."""
    validation_size(options, data_dir)  # before training, not after
    train_dir = tempfile.mkdtemp(prefix=combo + '_', dir=work_dir)
    try:
        figures, checkpoints = train(combo, options, data_dir, train_dir, extra_flags, seed)
        accuracies = evaluate(options, data_dir, [os.path.join(train_dir, 'model.ckpt-%d' % s)
                                                  for s, _ in checkpoints])
    finally:
        shutil.rmtree(train_dir, ignore_errors=True)  # every checkpoint is kept until here
    curve = [[s, t, a] for (s, t), a in zip(checkpoints, accuracies)]
    reached = [point for point in curve if point[2] >= options.target_accuracy]
    record = dict(figures, study='four_combos', combo=combo, label=label or combo,
                  curve=curve, final_accuracy=accuracies[-1],
                  steps_to_target=reached[0][0] if reached else None,
                  time_to_target_s=reached[0][1] if reached else None,
                  options=dataclasses.asdict(options), extra_flags=list(extra_flags),
                  seed=options.tf_random_seed if seed is None else seed)
    record['global_steps_per_sec'] = record['global_steps'] / record['train_time_s']
    record['images_to_target'] = (reached[0][0] * record['images_per_update'] if reached
                                  else None)
    return record


# Figures summarised over the repeats (the rest of a repeat's record stays in its 'runs').
FIGURES = ('images_to_target', 'time_to_target_s', 'final_accuracy', 'images_per_sec',
           'global_steps_per_sec', 'train_time_s', 'staleness_mean', 'staleness_max',
           'stale_gradients_dropped', 'dropped_gradients')


def run_repeats(combos, options, data_dir, work_dir, extra_flags=(), labels=None):
    """Each combination options.repeats times (seeds tf_random_seed + r), in rounds.

    Args:
      combos: combination names; labels: their row labels (default: the names); each may be
        a (combination, options, extra flags) triple instead, for rows that differ in more.
    Returns:
      One record of summaries per row (`common.repeat_in_rounds`).
    """
    rows = [c if isinstance(c, tuple) else (c, options, ()) for c in combos]
    labels = labels or [c[0] for c in rows]
    measures = [functools.partial(run_combo, combo, row_options, data_dir, work_dir,
                                  list(extra_flags) + list(extra), label)
                for (combo, row_options, extra), label in zip(rows, labels)]
    return common.repeat_in_rounds(measures, options.repeats, options.tf_random_seed, FIGURES)


# One unit per column: images (applied) and seconds to the target, never global steps, whose
# images differ between synchronous and asynchronous updates.
TABLE = [('combination', 'label', None), ('images to target', 'images_to_target', '%d'),
         ('s to target', 'time_to_target_s', '%.1f'), ('images/s', 'images_per_sec', '%.0f'),
         ('final acc', 'final_accuracy', '%.3f'),
         ('staleness mean', 'staleness_mean', '%.2f'), ('staleness max', 'staleness_max', '%d'),
         ('dropped gradients', 'dropped_gradients', '%d')]


def conclusion(records, target):
    """Lines computed from the summaries: who reached the target, which differences are real."""
    lines = []
    for r in records:
        reached = sum(v is not None for v in r['images_to_target']['values'])
        if reached < r['repeats']:
            lines.append('%s reached %.2f in %d of %d repeats' % (r['label'], target, reached,
                                                                  r['repeats']))
    if not lines:
        lines.append('every repeat of every row reached %.2f' % target)
    for key, name, fmt, below in (
            ('images_to_target', 'images to target', '%d', 'needs fewer images than'),
            ('time_to_target_s', 'seconds to target', '%.1f', 'needs fewer seconds than')):
        lines += stats.differences(name, [(r['label'], r[key]) for r in records], fmt, below)
    return lines


def figure(records, options, title, stamp):
    """The accuracy curves' (header, points): a point per checkpoint of every repeat of every
    row, drawn as accuracy vs images and vs seconds, median and range over the repeats, one
    line a row (`experiments.figures.accuracy`); `stamp`: the run's machine, date, commit and
    command (`tfhp.provenance.stamp()`, taken when the study started)."""
    points = [{'series': r['label'], 'repeat': repeat, 'step': s,
               'images': s * run['images_per_update'], 'seconds': t, 'accuracy': a}
              for r in records for repeat, run in enumerate(r['runs'], 1)
              for s, t, a in run['curve']]
    return dict(kind='accuracy', title=title, target=options.target_accuracy, **stamp), points


def report(records, options, heading, reference=None, table=TABLE):
    """Prints the heading, the table (its rows marked against `reference`, default the first
    row) and the conclusion."""
    reference = reference or records[0]
    print(heading)
    common.print_table(stats.mark(records, reference, FIGURES), table, reference['label'])
    print('conclusion, from the repeats (experiments/stats.py):')
    print('\n'.join('  ' + line for line in conclusion(records, options.target_accuracy)))


def define_flags(defaults, work_dir_name, plot='accuracy vs images and vs seconds'):
    """Defines the flags of Options (with these defaults) and of the data.

    Called only by scripts run as such, so tests can import them.
    Returns:
      The keyword arguments of `frame.main`, which defines the rest of Options' flags:
      --num_steps (an alias of --steps), --repeats and --tf_random_seed (of --seed); and
      --plot and --figure_data (`figure`).
    """
    flags.DEFINE_integer('num_replicas', defaults.num_replicas, 'Replicas (devices or workers).')
    flags.DEFINE_integer('spare_replicas', defaults.spare_replicas, 'between_graph_sync: '
                         'workers beyond --num_replicas (backup workers).')
    flags.DEFINE_string('model', defaults.model, 'Model.')
    flags.DEFINE_integer('image_size', defaults.image_size, 'Image size of the data set.')
    flags.DEFINE_integer('batch_size', defaults.batch_size, 'Batch per replica.')
    flags.DEFINE_string('optimizer', defaults.optimizer, 'Optimizer.')
    flags.DEFINE_float('learning_rate', defaults.learning_rate, 'Learning rate.')
    flags.DEFINE_integer('eval_every', defaults.eval_every, 'Checkpoint every this many '
                         'batches per replica.')
    flags.DEFINE_float('target_accuracy', defaults.target_accuracy, 'Validation top-1 target.')
    flags.DEFINE_integer('eval_batch_size', defaults.eval_batch_size, 'Must divide the '
                         'validation set.')
    flags.DEFINE_float('timeout_s', defaults.timeout_s, 'Bound on each training run.')
    flags.DEFINE_string('data_dir', None, 'Data set (default: generated under --work_dir).')
    flags.DEFINE_string('work_dir', os.path.join(tempfile.gettempdir(), work_dir_name),
                        'Generated data and checkpoints.')
    flags.DEFINE_list('tfhp_flags', [], 'Extra tfhp flags for every run.')
    return dict(steps=defaults.num_steps, repeats=defaults.repeats,
                seed=defaults.tf_random_seed, plot=plot,
                figure_data='checkpoint of every repeat (its accuracy, images and seconds)')


def study_setup():
    """(Options, data directory) from the flags; the data set is generated if needed."""
    compat.enable_graph_mode()
    options = Options(**{f.name: getattr(FLAGS, f.name) for f in dataclasses.fields(Options)})
    os.makedirs(FLAGS.work_dir, exist_ok=True)
    return options, FLAGS.data_dir or common.learnable_data(FLAGS.work_dir, options.image_size)

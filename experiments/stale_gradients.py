"""Stale gradients in asynchronous training: time to accuracy with and without each remedy.

Runs the asynchronous combination of `four_combos` (experiments/convergence.py; in-graph by
default, --mode for the between-graph job) with 4 replicas, so that updates are several steps
stale, once per remedy:

  none         plain asynchronous SGD
  lr_scaled    the learning rate divided by the number of replicas
  drop         gradients older than --max_gradient_staleness updates dropped (applied as zeros)
  inverse      each gradient scaled by 1/staleness (--scale_stale_gradients)
  warmup       one replica trains alone for --async_warmup_steps global steps, then all join
  sync         the synchronous combination of the same mode, for reference

Every run trains the same images (--num_steps batches per replica), each remedy --repeats times
(seeds --tf_random_seed + r); the table shows, as median [min-max] over the repeats, images and
seconds to --target_accuracy, the final accuracy, the measured staleness and how many gradients
the drop remedy discarded, with '*' where a remedy's range is apart from plain async's (`none`,
the reference row; experiments/stats.py).

  python -m experiments.stale_gradients --plot=stale.png       # ~15 minutes on 2 cores
  python -m experiments.stale_gradients --mode=between_graph --remedies=none,drop,warmup
"""
import dataclasses

from absl import flags

from experiments import common
from experiments import convergence
from experiments import frame
from experiments import presets
from tfhp import modes
from tfhp import provenance

REMEDIES = ('none', 'lr_scaled', 'drop', 'inverse', 'warmup', 'sync')
FLAGS = flags.FLAGS


def remedy_run(remedy, mode, options, max_staleness, warmup_steps):
    """(combination, options, extra tfhp flags) of one remedy."""
    combo = presets.combo(mode, synchronous=remedy == 'sync')
    if remedy == 'lr_scaled':
        options = dataclasses.replace(options,
                                      learning_rate=options.learning_rate / options.num_replicas)
    extra = {'drop': ['--max_gradient_staleness=%d' % max_staleness],
             'inverse': ['--scale_stale_gradients'],
             'warmup': ['--async_warmup_steps=%d' % warmup_steps]}.get(remedy, [])
    return combo, options, extra


def run(remedies, mode, options, data_dir, work_dir, max_staleness, warmup_steps,
        extra_flags=()):
    """One `convergence` record (summaries over options.repeats) per remedy, labelled with it."""
    rows = [remedy_run(r, mode, options, max_staleness, warmup_steps) for r in remedies]
    records = convergence.run_repeats(rows, options, data_dir, work_dir, extra_flags,
                                      labels=list(remedies))
    return [dict(record, study='stale_gradients', remedy=remedy, mode=mode)
            for record, remedy in zip(records, remedies)]


TABLE = [('remedy', 'label', None)] + convergence.TABLE[1:5] + [
    ('staleness mean', 'staleness_mean', '%.2f'), ('staleness max', 'staleness_max', '%d'),
    ('dropped stale', 'stale_gradients_dropped', '%d')]


def study():
    """The remedies of --remedies, trained, evaluated and reported against plain async."""
    common.check_choices('remedies', FLAGS.remedies, REMEDIES)
    options, data_dir = convergence.study_setup()
    stamp = provenance.stamp()  # the commit that ran, not the one at the end
    records = run(FLAGS.remedies, FLAGS.mode, options, data_dir, FLAGS.work_dir,
                  FLAGS.max_gradient_staleness, FLAGS.async_warmup_steps, FLAGS.tfhp_flags)
    heading = ('%s, %d replicas, target accuracy %.2f, %d steps of %d per replica, %d repeats'
               % (FLAGS.mode, options.num_replicas, options.target_accuracy, options.num_steps,
                  options.batch_size, options.repeats))
    convergence.report(records, options, heading, table=TABLE, reference=next(
        (r for r in records if r['remedy'] == 'none'), None))
    common.write_records(records, FLAGS.result_file)
    frame.figure(*convergence.figure(records, options, heading, stamp))


if __name__ == '__main__':
    flags.DEFINE_list('remedies', list(REMEDIES), 'Remedies to compare: %s.' % ', '.join(
        REMEDIES))
    flags.DEFINE_enum('mode', modes.IN_GRAPH, modes.CLUSTER_GRAPH_MODES, 'Asynchronous '
                      'in-graph replicas (threads) or between-graph workers (processes).')
    flags.DEFINE_integer('max_gradient_staleness', 2, 'drop: the oldest gradient kept.')
    flags.DEFINE_integer('async_warmup_steps', 50, 'warmup: global steps of one replica.')
    # 4 replicas make updates several steps stale (docs/results.md's table: 300 steps each, 0.8).
    frame.main(study, **convergence.define_flags(
        convergence.Options(num_replicas=4, num_steps=300, target_accuracy=0.8),
        'tfhp_stale_gradients'))

"""In-graph vs between-graph replication x synchronous vs asynchronous updates, to an accuracy.

  in_graph_sync        one graph, a tower per (virtual CPU) device, one optimizer
  in_graph_async       one graph, a replica per device with its own optimizer and thread
  between_graph_async  a process per worker, variables on a ps task, each worker applies alone
  between_graph_sync   a process per worker, steps of --num_replicas gradients out of
                       --num_replicas + --spare_replicas workers (spares: late ones dropped)

Each (`presets.COMBOS`; experiments/convergence.py trains and evaluates them) trains the same
CNN on the same learnable data set (`tfhp.data.synthetic`), --num_steps batches of --batch_size
per replica (the spare replica's included), as one `python -m tfhp` run or one `tfhp.launch`
job, checkpointing every --eval_every steps per replica (between timed steps; between graphs
the chief writes them). Every checkpoint is then evaluated on the whole
validation set. Each combination runs --repeats times, repeat r with --tf_random_seed + r (the
weights' initialisation, the data order), and every figure is reported as its median and range
over the repeats (experiments/stats.py).

Figures, one unit each: images to --target_accuracy (the first checkpoint at or above it; its
applied updates times the images of one update: a synchronous step applies --num_replicas
batches, an asynchronous update one; a synchronous job's dropped gradients are not counted),
training seconds to the target (timed training, without start-up or checkpoint writing; between
graphs on the chief's clock), images/sec (every image computed, dropped ones included), final
accuracy, the measured gradient staleness (`tfhp.replication.staleness`: 0 for synchronous
in-graph steps) and the dropped gradients of the synchronous job. Rows are marked '*' where
their range is apart from the first combination's, and the conclusion lists which differences
are real and which are within noise.

  python -m experiments.four_combos --plot=combos.png    # all four, 3 repeats: 5.7 min on 2 cores
  python -m experiments.four_combos --combo=in_graph_async --num_replicas=4 --repeats=5
"""
from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import flags  # pylint: disable=g-import-not-at-top

from experiments import common
from experiments import convergence
from experiments import frame
from experiments import presets
from tfhp import provenance

FLAGS = flags.FLAGS


def study():
    """The combinations of --combo, trained, evaluated and reported."""
    common.check_choices('combo', FLAGS.combo, presets.COMBOS)
    options, data_dir = convergence.study_setup()
    stamp = provenance.stamp()  # the commit that ran, not the one at the end
    records = convergence.run_repeats(FLAGS.combo, options, data_dir, FLAGS.work_dir,
                                      FLAGS.tfhp_flags)
    heading = ('target accuracy %.2f, %d replicas, %d steps of %d per replica, %d repeats'
               % (options.target_accuracy, options.num_replicas, options.num_steps,
                  options.batch_size, options.repeats))
    convergence.report(records, options, heading)
    common.write_records(records, FLAGS.result_file)
    frame.figure(*convergence.figure(records, options, heading, stamp))


if __name__ == '__main__':
    flags.DEFINE_list('combo', list(presets.COMBOS), 'Combinations to run.')
    frame.main(study, **convergence.define_flags(convergence.Options(), 'tfhp_four_combos'))

"""One traced step of each pipelined push-pull (--transfers), as timelines.

Runs a synchronous `distributed_replicated` job of --model on --num_ps ps tasks (default one)
and --num_workers workers, on emulated links of --rate, for each of --transfers
(`experiments.link_jobs`; by default the pipelined transfer and the same with background
pulls), each with --tfhp_flags. The chief traces timed step --trace_step of
each (`--trace_file`; the background runs that overlap it, the pulls and the chief's applies,
are merged in), and the figure stacks worker 0's steps on one time axis: its forward and
backward ops, its pushes and pulls on the wire, the chief's applies
(`tfhp.profiling.push_pull`). Writes --plot and the same figure as SVG beside it, one JSON
line per transfer (its traced step and its timed steps' median) to --result_file, and the
figure's data, one line per op, to --figure_data (`python -m experiments.figures` draws it
again).

  python -m experiments.pull_timeline --rate=1gbit \
      --figure_data=docs/results/data/pull_timeline.jsonl  # then python -m experiments.figures
  python -m experiments.pull_timeline --rate=60mbit \
      --emulated_compute=tests/data/resnet20_profile.json --plot=pull_timeline_resnet20.png
"""
import os
import re
import tempfile

from absl import flags

from experiments import common
from experiments import frame
from experiments import link_jobs
from experiments.figures import traced_step
from tfhp import provenance
from tfhp.profiling import capture
from tfhp.profiling import push_pull

FLAGS = flags.FLAGS


def measure(transfer, trace_dir):
    """Runs one traced job; returns its record and its traced step's rows."""
    trace = os.path.join(trace_dir, '%s.json' % re.sub(r'\W+', '_', transfer))
    args = link_jobs.job_args(FLAGS.model, FLAGS.steps, FLAGS.warmup_steps,
                              link_jobs.transfer_args(transfer)) + FLAGS.tfhp_flags + [
                                  '--trace_file=' + trace, '--trace_step=%d' % FLAGS.trace_step]
    run = common.run_cluster(FLAGS.num_ps, FLAGS.num_workers, args, link_bandwidth=FLAGS.rate)
    if run.error:
        raise RuntimeError('%s: the job failed: %s' % (transfer, run.error))
    rows = push_pull.rows(capture.load_run_metadata(trace + capture.RUN_METADATA_SUFFIX))
    step = [span for row in (push_pull.FORWARD, push_pull.BACKWARD, push_pull.PUSH)
            for span in rows[row]]
    step_ms = run.results[('worker', 0)].get('step_time_ms') or {}
    record = dict(label=link_jobs.transfer_label(transfer), model=FLAGS.model, rate=FLAGS.rate,
                  num_workers=FLAGS.num_workers, timed_step_ms_p50=step_ms.get('p50'),
                  # From the step's first op (the rows' 0) to its last push: its compute and
                  # sends; the step before's pushes may run into it (priority pushes).
                  traced_step_ms=max(end for _, end in step),
                  pushes=len(rows[push_pull.PUSH]), pulls=len(rows[push_pull.PULL]))
    return record, rows


def panel_title(record):
    return ('%s: traced step, first op to last push %.0f ms (timed steps: median %.0f ms)'
            % (record['label'], record['traced_step_ms'],
               record['timed_step_ms_p50'] or float('nan')))


def study():
    """Runs a traced job of each transfer, writes their records, keeps and draws their figure."""
    link_jobs.check_transfers('transfers', FLAGS.transfers)
    stamp = provenance.stamp()  # the commit that ran, not the one at the end
    if FLAGS.emulated_compute:
        FLAGS.model = link_jobs.add_emulated(FLAGS.emulated_compute)
    if FLAGS.trace_dir:
        os.makedirs(FLAGS.trace_dir, exist_ok=True)
    with tempfile.TemporaryDirectory() as temporary:
        measured = [measure(transfer, FLAGS.trace_dir or temporary)
                    for transfer in FLAGS.transfers]
    records = [record for record, _ in measured]
    common.write_records(records, FLAGS.result_file)
    for r in records:
        print(panel_title(r))
    header = dict(
        kind='timeline', rows=list(push_pull.ROWS),
        title=('%s, %d worker(s), %d ps, %s links, pipelined push-pull: worker 0\'s traced step'
               % (FLAGS.model, FLAGS.num_workers, FLAGS.num_ps, FLAGS.rate)),
        note=('pushes and pulls of at least %d KiB, drawn on the wire (from the later of the '
              'request and the previous arrival)' % (push_pull.MIN_BYTES // 1024)),
        panel_titles={r['label']: panel_title(r) for r in records}, **stamp)
    frame.figure(header, [point for r, rows in measured
                          for point in traced_step.points(r['label'], rows)])


if __name__ == '__main__':
    flags.DEFINE_string('rate', '1gbit', 'Emulated link rate (tc units; needs root).')
    flags.DEFINE_string('model', 'lenet', 'A links-study model (experiments.link_jobs.MODELS).')
    flags.DEFINE_string('emulated_compute', None, 'A compute profile (python -m tfhp.calibrate): '
                        'run its emulated model (compute waited, not run on the shared cores) '
                        'in place of --model.')
    flags.DEFINE_integer('num_workers', 1, 'Workers of each job.')
    flags.DEFINE_integer('num_ps', 1, 'ps tasks of each job.')
    flags.DEFINE_list('transfers', [link_jobs.PIPELINED, link_jobs.BACKGROUND], 'The transfers '
                      'traced, a panel each (experiments.link_jobs.transfer_args: a TRANSFERS key, '
                      'a pipelined one with @CHUNK/WINDOW).')
    flags.DEFINE_list('tfhp_flags', [], 'Extra tfhp flags for every job (e.g. '
                      '--ps_group_bytes=65536).')
    flags.DEFINE_integer('trace_step', 5, 'The timed step the chief traces.')
    flags.DEFINE_string('trace_dir', None, 'Keep the traces here (<transfer>.json and its '
                        '.runmeta.pb); default: a temporary directory.')
    frame.main(study, steps=10, warmup_steps=3, repeats=None, seed=None,
               plot='the traced steps\' timelines', figure_data='op of the traced steps')

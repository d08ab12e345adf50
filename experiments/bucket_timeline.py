"""One traced step with gradient buckets and one with the single pack, drawn as timelines.

Runs two `collective_all_reduce` jobs of --num_workers workers on the emulated compute of
resnet20 (each layer's forward and backward compute a wait, `tfhp.emulation`), on loopback or on
emulated links of --rate: one with --fusion_bucket_bytes=--bucket_bytes, one with the single
pack (a bucket of everything, all-reduced after the backward pass). The chief traces timed step
--trace_step of each (`--trace_file`), and the figure stacks the two steps' timelines on one
time axis: the forward and backward waits and the all-reduce ops (bucket concat + collective),
with the backward pass's end marked. With buckets the all-reduce bars start during the backward
waits; with one pack only after them. Writes --plot and the same figure as SVG beside it, one
JSON line per variant (its traced step's overlap figures, `tfhp.profiling.timeline`, and its
timed steps' median) to --result_file, and the figure's data, one line per op, to
--figure_data (`python -m experiments.figures` draws it again).

  python -m experiments.bucket_timeline --rate=60mbit \
      --figure_data=docs/results/data/bucket_timeline.jsonl  # then python -m experiments.figures
"""
import os
import tempfile

from absl import flags

from experiments import common
from experiments import frame
from experiments import presets
from experiments.figures import traced_step
from tfhp import provenance
from tfhp.profiling import capture
from tfhp.profiling import events
from tfhp.profiling import timeline

FLAGS = flags.FLAGS
PROFILE = 'tests/data/resnet20_profile.json'
BACKWARD_END = 'last backward wait ends'


def variants(bucket_bytes):
    """[(label, --fusion_bucket_bytes)]: the buckets first, then the single pack."""
    return [('%d KiB buckets' % (bucket_bytes // 1024), bucket_bytes),
            ('one pack (all gradients)', presets.ONE_PACK_BYTES)]


def measure(label, bucket_bytes, trace_dir):
    """Runs one traced job; returns its record and its traced step's ops."""
    trace = os.path.join(trace_dir, '%d.json' % bucket_bytes)
    args = ['--variable_update=collective_all_reduce', '--emulated_compute=' + PROFILE,
            '--model=resnet20', '--data_name=cifar10', '--fusion_bucket_bytes=%d' % bucket_bytes,
            '--num_batches=%d' % FLAGS.steps, '--num_warmup_batches=%d' % FLAGS.warmup_steps,
            '--trace_file=' + trace, '--trace_step=%d' % FLAGS.trace_step]
    run = common.run_cluster(0, FLAGS.num_workers, args, link_bandwidth=FLAGS.rate)
    if run.error:
        raise RuntimeError('%s: the job failed: %s' % (label, run.error))
    ops = events.parse(capture.load_run_metadata(trace + capture.RUN_METADATA_SUFFIX)).ops
    step_ms = run.results[('worker', 0)].get('step_time_ms') or {}
    record = dict(label=label, fusion_bucket_bytes=bucket_bytes, rate=FLAGS.rate or 'loopback',
                  num_workers=FLAGS.num_workers, timed_step_ms_p50=step_ms.get('p50'),
                  **timeline.overlap(ops)._asdict())
    return record, ops


def panel_title(record):
    return ('%s: traced step %.0f ms (timed steps: median %.0f ms); all-reduce %.1f ms, '
            '%.1f ms of it during the backward waits'
            % (record['label'], record['step_ms'], record['timed_step_ms_p50'] or float('nan'),
               record['all_reduce_ms'], record['overlapped_ms']))


def study():
    """Runs both traced jobs, writes their records, keeps and draws their figure."""
    stamp = provenance.stamp()  # the commit that ran, not the one at the end
    with tempfile.TemporaryDirectory() as temporary:
        trace_dir = FLAGS.trace_dir or temporary
        measured = [measure(label, size, trace_dir)
                    for label, size in variants(FLAGS.bucket_bytes)]
    records = [record for record, _ in measured]
    common.write_records(records, FLAGS.result_file)
    for r in records:
        print(panel_title(r))
    header = dict(
        kind='timeline', rows=list(timeline.ROWS),
        title=('resnet20, emulated compute, collective all-reduce, %d workers, %s: worker 0\'s '
               'traced step' % (FLAGS.num_workers, FLAGS.rate or 'loopback')),
        panel_titles={r['label']: panel_title(r) for r in records},
        marks={BACKWARD_END: [round(r['backward_end_ms'], 3) for r in records]}, **stamp)
    frame.figure(header, [point for r, ops in measured
                          for point in traced_step.points(r['label'], timeline.rows(ops))])


if __name__ == '__main__':
    flags.DEFINE_string('rate', None, 'Emulated link rate (tc: 60mbit; needs root); '
                        'default loopback.')
    flags.DEFINE_integer('num_workers', 2, 'Workers of each job.')
    flags.DEFINE_integer('bucket_bytes', 256 * 1024, '--fusion_bucket_bytes of the buckets.')
    flags.DEFINE_integer('trace_step', 5, 'The timed step the chief traces.')
    flags.DEFINE_string('trace_dir', None, 'Keep the traces here (<bucket bytes>.json and its '
                        '.runmeta.pb); default: a temporary directory.')
    frame.main(study, steps=10, warmup_steps=3, repeats=None, seed=None,
               plot='the two traced steps\' timelines', figure_data='op of the traced steps')

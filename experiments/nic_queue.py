"""Each worker's pull, compute and push in one traced step, behind the NICs' fair queues.

Runs one synchronous parameter-server job on emulated links (`tfhp.launcher.links`): W workers
of a compute profile (`--emulated_compute`), 1 ps, every NIC at --rate. Every worker traces
timed step --trace_step (`--trace_file` with `{task}`), and the figure draws a row per worker:
when its weights arrived (pull), its compute, and when the ps received its gradients (push), on
one clock (`tfhp.profiling.worker_phases`). Behind a queue per peer the pulls end together, as
the step model (`tfhp.prediction.step_model`) has them. (Until commit 52a41b8 it also ran the
job behind one FIFO queue, `--link_queue=fifo`, where the ps served its workers nearly in turn.)
Writes --plot and an SVG beside it, and one JSON line (the pull spread, the traced and timed
steps, the step model's at the nominal rate) to --result_file.

  python -m experiments.nic_queue --profile=experiments/profiles/lenet.json --num_workers=6 \\
      --rate=1gbit --plot=docs/img/nic_queue.png
"""
import glob
import os
import tempfile

from absl import flags

from experiments import common
from experiments import frame
from experiments.figures import phases
from tfhp import provenance
from tfhp.emulation import profile as profile_lib
from tfhp.launcher import link_config
from tfhp.prediction import step_model
from tfhp.profiling import capture
from tfhp.profiling import worker_phases

FLAGS = flags.FLAGS


def _traces(trace_dir):
    """{'worker N': worker_phases.read spans} of every worker's trace in trace_dir."""
    spans = {}
    for path in glob.glob(os.path.join(trace_dir, 'step.*.json' + capture.RUN_METADATA_SUFFIX)):
        index = int(os.path.basename(path).split('.')[1])
        spans['worker %d' % index] = worker_phases.read(capture.load_run_metadata(path))
    return spans


def measure(profile, trace_dir):
    """One traced job; its record and its workers' `Phases`."""
    args = profile.tfhp_args(FLAGS.profile) + [
        '--num_batches=%d' % FLAGS.steps, '--num_warmup_batches=%d' % FLAGS.warmup_steps,
        '--trace_file=' + os.path.join(trace_dir, 'step.{task}.json'),
        '--trace_step=%d' % FLAGS.trace_step, '--display_every=1000',
        '--peer_timeout_s=%d' % FLAGS.peer_timeout_s]
    run = common.run_cluster(1, FLAGS.num_workers, args, link_bandwidth=FLAGS.rate,
                             timeout_s=FLAGS.job_timeout_s)
    if run.error:
        raise RuntimeError('the job failed: %s' % run.error)
    rows = worker_phases.align(_traces(trace_dir))
    if len(rows) != FLAGS.num_workers:
        raise RuntimeError('%d of %d workers wrote a trace' % (len(rows), FLAGS.num_workers))
    cluster = step_model.Cluster(num_workers=FLAGS.num_workers, num_ps=1,
                                 nic_bps=link_config.parse_rate(FLAGS.rate))
    predicted = step_model.predict(profile, cluster, apply_s=profile.apply_s).step_s
    ends = sorted(r.pull[1] for r in rows)
    record = dict(study='nic_queue', link_queue='fair', model=profile.model,
                  workers=FLAGS.num_workers, rate=FLAGS.rate,
                  global_step_ms=1000.0 / common.cluster_figures(run.summary)[
                      'global_steps_per_sec'],
                  predicted_ms=1000.0 * predicted,
                  traced_step_ms=max(r.push[1] for r in rows if r.push),
                  pull_ends_ms=ends, pull_spread_ms=worker_phases.pull_spread_ms(rows),
                  tcp=run.summary['links']['tcp'])
    return record, rows


def _bars(row):
    """{phase: intervals} of a worker's row: its pull and push whole, its compute ops' own."""
    return {'pull': [row.pull], 'compute': row.busy, 'push': [row.push]}


def panel_title(record):
    return ('%s queues: pulls end %.0f-%.0f ms (spread %.0f ms); timed step %.0f ms, '
            'step model %.0f ms' % (record['link_queue'], record['pull_ends_ms'][0],
                                     record['pull_ends_ms'][-1], record['pull_spread_ms'],
                                     record['global_step_ms'], record['predicted_ms']))


def study():
    """Runs the traced job, writes its record, draws --plot (and its SVG)."""
    profile = profile_lib.load(FLAGS.profile)
    with tempfile.TemporaryDirectory() as trace_dir:
        measured = [measure(profile, trace_dir)]
    records = [record for record, _ in measured]
    common.write_records(records, FLAGS.result_file)
    for r in records:
        print(panel_title(r))
    if FLAGS.plot:
        panels = [(panel_title(r), [(row.task, _bars(row)) for row in rows])
                  for r, rows in measured]
        title = ('%s, emulated compute, %d workers and 1 ps at %s, TCP %s: each worker\'s '
                 'traced step' % (profile.model, FLAGS.num_workers, FLAGS.rate, records[0]['tcp']))
        caption = provenance.caption()
        common.draw(lambda path: phases.draw(path, panels, worker_phases.PHASES, title=title,
                                              caption=caption), FLAGS.plot)


if __name__ == '__main__':
    flags.DEFINE_string('profile', 'experiments/profiles/lenet.json',
                        'A compute profile (python -m tfhp.calibrate).')
    flags.DEFINE_integer('num_workers', 6, 'Workers of each job.')
    flags.DEFINE_string('rate', '1gbit', 'Every NIC\'s rate (tc units; needs root).')
    flags.DEFINE_integer('trace_step', 5, 'The timed step every worker traces.')
    flags.DEFINE_integer('peer_timeout_s', 240, 'Each task\'s bound on a silent peer.')
    flags.DEFINE_integer('job_timeout_s', 600, 'Bound on each job, start to end.')
    frame.main(study, steps=10, warmup_steps=3, repeats=None, seed=None,
               plot='each worker\'s phases')

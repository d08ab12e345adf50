"""Each fault of a running job, injected once on loopback, and how long every task took to end.

  python -m experiments.fault_bounds [--faults=killed_ps_sync,...] [--peer_timeout_s=5]
      [--step_timeout_s=10] [--result_file=faults.jsonl]

Faults (1 ps + 2 workers started by hand, trivial model at 8x8; `tfhp.launcher.hand_started`):
  killed_ps_sync, killed_ps_async   SIGKILL the ps while both workers train
  stopped_worker_sync, stopped_worker_async   SIGSTOP worker 1 (its port still accepts)
  sigterm_worker                    SIGTERM worker 1: the whole job stops at a common step
  restarted_worker_sync             SIGKILL worker 1, start it again alone with the same flags
  mismatched_batch                  worker 1 started with another --batch_size
Each record: the fault, every task's exit status and seconds from the fault to its end (the
victim of a kill or SIGSTOP is not counted; a mismatch's fault is the moment the last of the
three servers listens, so that TensorFlow's import is not counted), the bound tfhp promises for
it, and the one line the tasks gave.
"""
import signal
import tempfile

from absl import flags

from experiments import common
from experiments import frame
from tfhp.launcher import hand_started

FLAGS = flags.FLAGS
FAULTS = ('killed_ps_sync', 'killed_ps_async', 'stopped_worker_sync', 'stopped_worker_async',
          'sigterm_worker', 'restarted_worker_sync', 'mismatched_batch')
_MODEL = ['--model=trivial', '--image_size=8', '--batch_size=2', '--num_classes=10',
          '--num_warmup_batches=2', '--weight_decay=0', '--display_every=10']
PS, W0, W1 = ('ps', 0), ('worker', 0), ('worker', 1)


# A disagreement ends its tasks within two of a peer's read periods at start-up (each two
# 0.5 s turns and a 2 s read, `tfhp.cluster.liveness.PeerWatch`): one to read it, one that
# the disagreeing task keeps answering so its peers read it too (`watchdog.Watchdog.fail`).
MISMATCH_S = 2 * (2 * 0.5 + 2.0)


def _bounds(peer_s, step_s):
    """The bound of each fault, from the tasks' timeouts (docs/faults.md explains each)."""
    return {'killed_ps_sync': step_s + peer_s, 'killed_ps_async': step_s + peer_s,
            'stopped_worker_sync': step_s + 2 * peer_s,
            'stopped_worker_async': peer_s + 1.0,
            'sigterm_worker': step_s + 2 * peer_s,
            'restarted_worker_sync': None, 'mismatched_batch': MISMATCH_S}


def _error_line(job, task):
    for line in job.log(task).splitlines():
        if line.startswith('tfhp: error: '):
            return line[len('tfhp: error: '):]
    return None


def measure(fault, peer_s, step_s, directory):
    """Injects `fault` into a fresh job; returns its record."""
    sync = not fault.endswith('async')
    args = _MODEL + ['--peer_timeout_s=%g' % peer_s, '--step_timeout_s=%g' % step_s,
                     '--cross_replica_sync=%s' % str(sync).lower(),
                     '--num_batches=%d' % (300 if fault.startswith(('stopped', 'restarted'))
                                           else 100000)]
    job = hand_started.HandStartedJob(directory, 1, 2, args)
    victim, counted = None, [PS, W0, W1]
    try:
        if fault == 'mismatched_batch':
            job.start(PS)
            job.start(W0)
            job.start(W1, job.commands[W1] + ['--batch_size=4'])
            job.wait_for_servers(counted, 240)
        else:
            job.start_all()
            job.wait_for_line(W1, 'step 10\t', 240)
            if fault.startswith('killed_ps'):
                victim = PS
                job.signal(PS, signal.SIGKILL)
            elif fault.startswith('stopped_worker'):
                victim = W1
                job.signal(W1, signal.SIGSTOP)
            elif fault == 'sigterm_worker':
                job.signal(W1, signal.SIGTERM)
            else:
                job.signal(W1, signal.SIGKILL)
                job.procs[W1].wait()
                job.start(W1)
        counted = [t for t in counted if t != victim]
        ended = job.wait(counted, 300)  # its seconds count from the fault
        seconds = {'%s %d' % t: round(s, 2) for t, (_, s) in ended.items()}
    finally:
        job.end_all()
    return {'fault': fault, 'bound_s': _bounds(peer_s, step_s)[fault],
            'exit_status': {'%s %d' % t: status for t, (status, _) in ended.items()},
            'seconds_to_end': seconds, 'slowest_s': max(seconds.values()),
            'message': next(filter(None, (_error_line(job, t) for t in counted)), None)}


TABLE = [('fault', 'fault', None), ('bound s', 'bound_s', '%g'),
         ('slowest s', 'slowest_s', '%.2f'), ('exit statuses', 'exit_status', None),
         ('message', 'message', None)]


def study():
    """Each fault of --faults injected into a fresh job, reported."""
    faults = FLAGS.faults or list(FAULTS)
    common.check_choices('faults', faults, FAULTS)
    records = []
    for fault in faults:
        with tempfile.TemporaryDirectory(prefix='tfhp_fault_') as directory:
            records.append(measure(fault, FLAGS.peer_timeout_s, FLAGS.step_timeout_s,
                                   directory))
    frame.report(records, TABLE)


if __name__ == '__main__':
    flags.DEFINE_list('faults', [], 'Faults to inject (default: all): %s.' % ', '.join(FAULTS))
    flags.DEFINE_float('peer_timeout_s', 5.0, 'The tasks\' --peer_timeout_s.')
    flags.DEFINE_float('step_timeout_s', 10.0, 'The tasks\' --step_timeout_s.')
    # One job per fault, once: a fault is not a figure to repeat, nothing is seeded.
    frame.main(study, repeats=None, seed=None)

"""A chaos run: a supervised job that random faults hit for a bounded time, and what it kept.

  python -m experiments.chaos [--duration_s=1200] [--interval_s=20,60] [--for_s=1,10]
      [--kinds=kill,pause,link_down] [--max_restarts=100] [--faults=N] [--seed=1]
      [--result_file=chaos.jsonl] [--plot=loss.png] [--figure_data=chaos_loss.jsonl]

The job: 1 ps and 3 workers on emulated links (--link_bandwidth), synchronous with one spare
(--replicas_to_aggregate=2), the trivial model on the learnable 8x8 images
(`common.learnable_data`, so that its loss falls) paced to --step_ms per step, a checkpoint
every --save_model_steps (all kept), under `tfhp.launch --max_restarts` (`recovery`). Its target
step is set so that the job, unfaulted, takes about 0.6 of --duration_s.

While it runs, every uniform(--interval_s) seconds a fault hits a random task (`chaos.Chaos`):
`kill -9`, a SIGSTOP that a SIGCONT ends after uniform(--for_s) seconds, or its link down for
as long; no fault starts later than --duration_s after the job's first step. A pause or a link down shorter than the tasks'
--peer_timeout_s is ridden through; a longer one, or a kill, ends the attempt, and the job
restarts from the chief's last checkpoint.

It checks, and reports as 'checks' (each True when kept):
  finished_at_target     the job ended well, at its target global step;
  checkpoints_readable   every checkpoint in the train dir restores (each tensor read);
  step_never_went_back   no attempt resumed from behind a checkpoint it had, and the latest
                         checkpoint never moved back (`chaos.Watch`);
  nothing_left           no process of any attempt and no namespace (so no link) remains.
The record also has every fault (kind, task, attempt, time, step, length, and whether the job
rode through it or restarted), the faults by kind, the restarts, steps redone and time lost.
--plot draws the chief's loss against the global step, one line per attempt, from the progress
log: a resumed attempt continues where its checkpoint left the loss; --figure_data keeps that
figure's data, one line per logged step (`python -m experiments.figures` draws it again).
"""
import collections
import contextlib
import glob
import json
import os
import tempfile
import time

from absl import flags

from experiments import common
from experiments import frame
from experiments.figures import chaos_loss
from tfhp import provenance
from tfhp.launcher import chaos
from tfhp.launcher import faults
from tfhp.launcher import links
from tfhp.launcher import plan
from tfhp.launcher import progress_log
from tfhp.launcher import recovery

FLAGS = flags.FLAGS
KINDS = ('kill', 'pause', 'link_down', 'slow_link')
NUM_PS, NUM_WORKERS = 1, 3
_MODEL = ['--model=trivial', '--image_size=8', '--batch_size=8', '--num_classes=10',
          '--num_warmup_batches=2', '--weight_decay=0', '--display_every=50',
          '--replicas_to_aggregate=2', '--max_ckpts_to_keep=0']
# An unfaulted job takes this share of --duration_s, so that faults hit it to the end and
# the restarts' lost time still leaves the job a bounded length.
_BUSY_SHARE = 0.6


def _pair(name, text):
    low, high = (float(v) for v in text)
    if not 0 <= low <= high:
        raise ValueError('--%s=%s: give LOW,HIGH seconds with 0 <= LOW <= HIGH'
                         % (name, ','.join(text)))
    return low, high


def _checkpoints_readable(train_dir):
    """(every checkpoint in train_dir, each tensor read; [(prefix, error)] of those that did
    not restore)."""
    import tensorflow as tf  # pylint: disable=import-outside-toplevel
    prefixes = sorted(p[:-len('.index')] for p in glob.glob(os.path.join(train_dir, '*.index')))
    unreadable = []
    for prefix in prefixes:
        try:
            reader = tf.train.load_checkpoint(prefix)
            for name in reader.get_variable_to_shape_map():
                reader.get_tensor(name)
        except Exception as e:  # pylint: disable=broad-except
            unreadable.append((os.path.basename(prefix), str(e).splitlines()[0]))
    return prefixes, unreadable


def _left_behind(injector, network_prefix):
    """Processes of any attempt still alive, and this run's namespaces still there."""
    alive = [pid for pid in injector.pids if os.path.exists('/proc/%d' % pid)]
    namespaces = [n for n in links._namespaces()  # pylint: disable=protected-access
                  if n.startswith(network_prefix)]
    return alive, namespaces


def _outcomes(records, recovered):
    """Each injected fault marked 'restart' (the last fault of an attempt that failed: the one
    that ended it) or 'rode through' (the job went on past it); returns the counts by kind."""
    failed = {f['attempt'] for f in recovered['faults']}
    last = {record['attempt']: record for record in records}
    for record in records:
        record['outcome'] = ('restart' if record['attempt'] in failed and
                             last[record['attempt']] is record else 'rode through')
    by_kind = collections.OrderedDict()
    for record in records:
        counts = by_kind.setdefault(record['kind'], {'injected': 0, 'rode through': 0,
                                                     'restart': 0})
        counts['injected'] += 1
        counts[record['outcome']] += 1
    return by_kind


def run(work_dir, duration_s, interval_s, for_s, kinds, count, seed, max_restarts, step_ms,
        save_steps, peer_timeout_s, step_timeout_s, link_bandwidth, steps=0, say=print):
    """One chaos run (see the module doc); returns its record and the chief's loss curve, one
    [(global step, loss)] per attempt."""
    data_dir = common.learnable_data(work_dir, image_size=8, train_examples=2000,
                                     validation_examples=100)
    train_dir = os.path.join(work_dir, 'train')
    progress_path = os.path.join(work_dir, 'progress')
    target = steps or max(1, int(_BUSY_SHARE * duration_s * 1000 / step_ms))
    args = _MODEL + [
        '--data_dir=' + data_dir, '--train_dir=' + train_dir,
        '--save_model_steps=%d' % save_steps,
        '--num_batches=%d' % target, '--straggler_workers=0,1,2',
        '--straggler_delay_ms=%g' % step_ms, '--peer_timeout_s=%g' % peer_timeout_s,
        '--step_timeout_s=%g' % step_timeout_s, '--progress_file=' + progress_path]
    injector = faults.Injector(say)
    injector.progress_path = progress_path
    tasks = plan.task_names(NUM_PS, NUM_WORKERS)
    network_prefix = '%s%d-' % (links.PREFIX, os.getpid())
    sink = open(os.path.join(work_dir, 'job.log'), 'w')
    started = time.monotonic()
    with sink, chaos.Watch(progress_path, train_dir) as watch, chaos.Chaos(
            injector, tasks, kinds, interval_s, for_s, duration_s, count, seed):
        summary, results = recovery.launch_recovering(
            NUM_PS, NUM_WORKERS, args, max_restarts, say=say, out=sink, injector=injector,
            link_bandwidth=link_bandwidth, timeout_s=3 * duration_s + 600)
    chief = results.get(('worker', 0), {})
    prefixes, unreadable = _checkpoints_readable(train_dir)
    alive, namespaces = _left_behind(injector, network_prefix)
    behind = watch.step_went_back(injector)
    recovered = summary['recovery']
    by_kind = _outcomes(injector.records, recovered)
    # Where each attempt's lines start in the progress log: with it the curve can be drawn
    # again from a kept --work_dir.
    with open(os.path.join(work_dir, 'attempt_starts.json'), 'w') as f:
        json.dump(injector.attempt_starts, f)
    target_step = int(plan.flag_value(summary['tfhp_args'], 'target_global_step'))
    checks = {
        'finished_at_target': (summary['status'] == 0 and
                               chief.get('global_step') == target_step),
        'checkpoints_readable': bool(prefixes) and not unreadable,
        'step_never_went_back': not behind and not watch.checkpoint_went_back(),
        'nothing_left': not alive and not namespaces}
    return {
        'duration_s': duration_s, 'status': summary['status'],
        'target_global_step': target_step,
        'final_global_step': chief.get('global_step'), 'checks': checks,
        'faults_injected': len(injector.records), 'faults_by_kind': by_kind,
        'faults': injector.records, 'restarts': recovered['restarts'],
        'steps_redone': recovered['steps_redone'],
        'time_lost_s': round(recovered['time_lost_s'], 1),
        'wall_time_s': round(time.monotonic() - started, 1),
        'checkpoints': len(prefixes), 'unreadable_checkpoints': unreadable,
        'resumed_behind': behind, 'processes_left': alive, 'namespaces_left': namespaces,
        'recovery': recovered['faults']}, progress_log.attempts(
            progress_path, [offset for _, offset in injector.attempt_starts])


def _print(records):
    record, = records
    print('chaos: %d faults in %g s; %d restarts, %d steps redone, %.1f s lost; final step %s '
          'of %d; status %d' % (record['faults_injected'], record['duration_s'],
                                record['restarts'], record['steps_redone'],
                                record['time_lost_s'], record['final_global_step'],
                                record['target_global_step'], record['status']))
    common.print_table([dict(kind=kind, **counts)
                        for kind, counts in record['faults_by_kind'].items()],
                       [('fault', 'kind', None), ('injected', 'injected', '%d'),
                        ('rode through', 'rode through', '%d'), ('restart', 'restart', '%d')])
    for name, kept in record['checks'].items():
        print('check %-22s %s' % (name, 'kept' if kept else 'BROKEN'))


def figure(record, curve, stamp):
    """The loss figure's (header, points) (`experiments.figures.chaos_loss`): a point per step
    the chief logged, by attempt, and the restarts; `stamp`: `tfhp.provenance.stamp()`."""
    return dict(
        kind='loss', restarts=[{key: fault[key] for key in ('attempt', 'reached_step',
                                                              'resumed_step')}
                               for fault in record['recovery']],
        title='chaos run: %d faults, %d restarts, final step %s of %d' % (
            record['faults_injected'], record['restarts'], record['final_global_step'],
            record['target_global_step']), **stamp), chaos_loss.points(curve)


def study():
    """The chaos run of the flags; exit status 1 when a check was broken."""
    kinds = FLAGS.kinds
    common.check_choices('kinds', kinds, KINDS)
    try:
        interval_s, for_s = _pair('interval_s', FLAGS.interval_s), _pair('for_s', FLAGS.for_s)
        links.check_available()
    except (ValueError, links.LinksUnavailable) as e:
        raise SystemExit('chaos: %s' % e)
    stamp = provenance.stamp()  # the commit that ran, not the one at the end
    with (contextlib.nullcontext(FLAGS.work_dir) if FLAGS.work_dir else
          tempfile.TemporaryDirectory(prefix='tfhp_chaos_')) as work_dir:
        os.makedirs(work_dir, exist_ok=True)
        record, curve = run(work_dir, FLAGS.duration_s, interval_s, for_s, kinds, FLAGS.faults,
                     FLAGS.seed, FLAGS.max_restarts, FLAGS.step_ms, FLAGS.save_model_steps,
                     FLAGS.peer_timeout_s, FLAGS.step_timeout_s, FLAGS.link_bandwidth,
                     FLAGS.steps,
                     say=lambda line: print('[chaos] ' + line, flush=True))
    frame.report([record], _print)
    frame.figure(*figure(record, curve, stamp))
    return 0 if all(record['checks'].values()) else 1


if __name__ == '__main__':
    flags.DEFINE_float('duration_s', 1200, 'No fault starts after this many seconds.')
    flags.DEFINE_list('interval_s', ['20', '60'], 'LOW,HIGH: seconds between faults.')
    flags.DEFINE_list('for_s', ['1', '10'], 'LOW,HIGH: seconds a pause or a link down lasts.')
    flags.DEFINE_list('kinds', ['kill', 'pause', 'link_down'], 'Fault kinds: %s.'
                      % ', '.join(KINDS))
    flags.DEFINE_integer('faults', None, 'Inject at most this many faults.')
    flags.DEFINE_integer('max_restarts', 100, 'The launcher\'s --max_restarts.')
    flags.DEFINE_float('step_ms', 100, 'Each worker\'s step takes at least this long.')
    flags.DEFINE_integer('steps', 0, 'The job\'s timed steps (0: as many as take %g of '
                         '--duration_s unfaulted).' % _BUSY_SHARE)
    flags.DEFINE_integer('save_model_steps', 25, 'The chief\'s checkpoint interval.')
    flags.DEFINE_float('peer_timeout_s', 5, 'The tasks\' --peer_timeout_s.')
    flags.DEFINE_float('step_timeout_s', 10, 'The tasks\' --step_timeout_s.')
    flags.DEFINE_string('link_bandwidth', '1gbit', 'Every task\'s NIC rate.')
    flags.DEFINE_string('work_dir', None, 'Keep the run here: the data, the checkpoints, the '
                        'job\'s log and the chief\'s progress log (default: a temporary '
                        'directory, removed).')
    # One chaos run: its faults are drawn from --seed, it is not a figure to repeat.
    frame.main(study, repeats=None, seed=1, plot='the loss against the global step, one line '
               'per attempt', figure_data='step the chief logged (attempt, global step, loss)')

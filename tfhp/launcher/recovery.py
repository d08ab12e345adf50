"""Supervised jobs: a job that loses a task is started again and resumes from the chief's last
checkpoint, until it reaches its target global step or runs out of restarts.

Recovery restarts the whole job, not the lost task alone. A synchronous TF1 job cannot take back
one task by itself: a restarted ps has lost its variables (every worker's session must restore
them), and a lost worker's peers have already ended through their watchdogs (docs/faults.md).
So each attempt is a fresh job (`local_job.launch_job`): the chief restores the latest checkpoint
in --train_dir, and every worker ends at the job's --target_global_step, the same in every
attempt (the launcher sets it once, from the checkpoint at the start + warm-up + --num_batches).
The steps redone after a fault are those between the checkpoint the next attempt resumed from
and the global step the failed attempt had reached (the chief appends it to --progress_file
after every step, `progress_log`): at most the checkpoint interval.

Each fault is recorded: the attempt, the tasks that failed and how, the global step reached and
resumed from, the steps redone, and the time lost (the failed attempt's work since its last
checkpoint, plus the next attempt's start until its first step). Imports no TensorFlow.
"""
import os
import re
import time

from tfhp import config as config_lib
from tfhp.launcher import local_job
from tfhp.launcher import plan
from tfhp.launcher import progress_log
from tfhp.launcher import supervisor

_CHECKPOINT = re.compile(r'^model_checkpoint_path:\s*"(.*)"', re.MULTILINE)


def checkpoint_step(train_dir):
    """The global step of the latest checkpoint in train_dir (TensorFlow's `checkpoint` index
    file: 'model_checkpoint_path: "model.ckpt-N"'), 0 without one."""
    try:
        with open(os.path.join(train_dir, 'checkpoint')) as f:
            match = _CHECKPOINT.search(f.read())
    except FileNotFoundError:
        return 0
    return int(match.group(1).rsplit('-', 1)[1]) if match else 0


def _checkpoint_time(train_dir):
    try:
        return os.path.getmtime(os.path.join(train_dir, 'checkpoint'))
    except FileNotFoundError:
        return None


def check(tfhp_args):
    """Raises ValueError, naming the flag, when a job with these flags cannot be recovered."""
    if not plan.flag_value(tfhp_args, 'train_dir'):
        raise ValueError('--max_restarts needs --train_dir in the tfhp flags: the chief\'s '
                         'checkpoints a restarted job resumes from')
    if not (plan.flag_value(tfhp_args, 'save_model_steps') or
            plan.flag_value(tfhp_args, 'save_model_secs')):
        raise ValueError('--max_restarts needs a checkpoint interval in the tfhp flags '
                         '(--save_model_steps or --save_model_secs): without one a fault '
                         'redoes every step since the start')


def target_step(tfhp_args):
    """The job's --target_global_step: the flag's, or the latest checkpoint's step + warm-up
    + --num_batches (tfhp's defaults for the flags left out)."""
    defaults = config_lib.RunConfig()
    given = int(plan.flag_value(tfhp_args, 'target_global_step', 0))
    if given:
        return given
    return (checkpoint_step(plan.flag_value(tfhp_args, 'train_dir')) +
            int(plan.flag_value(tfhp_args, 'num_warmup_batches', defaults.num_warmup_batches)) +
            int(plan.flag_value(tfhp_args, 'num_batches', defaults.num_batches)))


def _first_step_s(summary):
    """Seconds from an attempt's launch to its first worker's first step (None: no step)."""
    firsts = [t['start_to_first_step_s'] for t in summary.get('tasks', [])
              if t.get('start_to_first_step_s') is not None]
    return min(firsts) if firsts else None


def supervise(attempt, train_dir, progress_path, max_restarts, say=print, clock=time.time):
    """Runs `attempt` until a job ends well, is stopped by a signal, or max_restarts restarts
    have been made.

    Args:
      attempt: attempt() -> (summary, results) of one job (`local_job.launch_job`).
      train_dir: the chief's checkpoints.
      progress_path: where the chief writes its global step (--progress_file).
      max_restarts: the most restarts.
      say: called with each line the launcher prints.
      clock: epoch seconds.
    Returns:
      (summary, results) of the last attempt, the summary with 'recovery': {'restarts',
      'faults': [one record per fault], 'steps_redone', 'time_lost_s'}.
    """
    faults = []
    while True:
        started = clock()
        logged = progress_log.size(progress_path)  # this attempt's steps come after
        summary, results = attempt()
        if faults:
            first = _first_step_s(summary)
            faults[-1]['restart_to_first_step_s'] = first
            faults[-1]['time_lost_s'] = faults[-1]['since_checkpoint_s'] + (first or 0.0)
        status = summary['status']
        if status == 0 or status >= 128 or len(faults) == max_restarts:
            break
        ended = summary.get('ended_by_launcher', [])
        now = clock()
        steps = progress_log.read(progress_path, start=logged)
        # An attempt that took no step (a fault while it started) reached nothing: what the
        # log says before it is the previous attempt's, redone already.
        reached, resumed = (steps[-1][0] if steps else None), checkpoint_step(train_dir)
        saved = _checkpoint_time(train_dir)
        fault = {'attempt': len(faults) + 1, 'ended_after_s': now - started,
                 'failed': {name: supervisor.describe_status(code)
                            for name, code in summary['exit_codes'].items()
                            if code and name not in ended},
                 'ended_by_launcher': ended, 'root_cause': summary.get('root_cause'),
                 'reached_step': reached, 'resumed_step': resumed,
                 'steps_redone': max(0, (reached or 0) - resumed),
                 'since_checkpoint_s': now - max(saved or started, started)}
        faults.append(fault)
        say('fault %d: %s; %s, resuming from checkpoint step %d (%d steps to redo); '
            'restart %d of %d'
            % (fault['attempt'], ', '.join('%s %s' % kv for kv in fault['failed'].items())
               or 'the job failed', 'no step taken' if reached is None else
               'global step %d reached' % reached, resumed, fault['steps_redone'],
               len(faults), max_restarts))
    summary['recovery'] = {
        'restarts': len(faults), 'faults': faults,
        'steps_redone': sum(f['steps_redone'] for f in faults),
        'time_lost_s': sum(f.get('time_lost_s', f['since_checkpoint_s']) for f in faults)}
    return summary, results


def launch_recovering(num_ps, num_workers, tfhp_args, max_restarts, say=print, **launch_args):
    """`local_job.launch_job` under `supervise`: the tasks get --target_global_step (fixed
    once, `target_step`) and a --progress_file (theirs, or a temporary one).

    Raises:
      ValueError: the flags cannot be recovered (`check`), or launch_job's.
    """
    check(tfhp_args)
    train_dir = plan.flag_value(tfhp_args, 'train_dir')
    with progress_log.ensured(tfhp_args) as (args, progress_path):
        args.append('--target_global_step=%d' % target_step(tfhp_args))
        return supervise(
            lambda: local_job.launch_job(num_ps, num_workers, args, **launch_args),
            train_dir, progress_path, max_restarts, say)

"""Supervised jobs (`tfhp.launch --max_restarts`): a job that loses a task is started again,
resumes from the chief's checkpoint and ends at its target global step."""
import io
import os
import re
import signal
import threading
import time

import pytest

from tests.cluster import jobs
from tfhp.launcher import recovery


def _write_checkpoint(train_dir, step):
    with open(os.path.join(train_dir, 'checkpoint'), 'w') as f:
        f.write('model_checkpoint_path: "model.ckpt-%d"\n'
                'all_model_checkpoint_paths: "model.ckpt-%d"\n' % (step, step))


def test_the_latest_checkpoint_step_is_read_without_tensorflow(tmp_path):
    assert recovery.checkpoint_step(str(tmp_path)) == 0
    _write_checkpoint(str(tmp_path), 35)
    assert recovery.checkpoint_step(str(tmp_path)) == 35


def test_a_job_that_cannot_resume_is_refused_naming_the_flag(tmp_path):
    with pytest.raises(ValueError, match='--max_restarts needs --train_dir'):
        recovery.check(['--model=trivial'])
    with pytest.raises(ValueError, match='--save_model_steps or --save_model_secs'):
        recovery.check(['--train_dir=%s' % tmp_path])
    recovery.check(['--train_dir=%s' % tmp_path, '--save_model_steps=5'])


def test_the_target_is_fixed_once_from_the_checkpoint_at_the_start(tmp_path):
    args = ['--train_dir=%s' % tmp_path, '--num_batches=20', '--num_warmup_batches=3']
    assert recovery.target_step(args) == 23
    _write_checkpoint(str(tmp_path), 40)
    assert recovery.target_step(args) == 63
    assert recovery.target_step(args + ['--target_global_step=50']) == 50


def _fake_attempts(tmp_path, outcomes):
    """attempt() for `supervise`: each attempt reaches a step, writes a checkpoint and ends
    with a status, as (status, reached, checkpointed) in `outcomes` say."""
    train_dir, progress = str(tmp_path), str(tmp_path / 'global_step')
    remaining = list(outcomes)

    def attempt():
        status, reached, checkpointed = remaining.pop(0)
        _write_checkpoint(train_dir, checkpointed)
        with open(progress, 'a') as f:
            f.write('%d 1.0\n' % reached if reached else '')
        codes = {'ps 0': 0, 'worker 0': 1 if status else 0, 'worker 1': -9 if status else 0}
        return ({'status': status, 'exit_codes': codes, 'ended_by_launcher': [],
                 'tasks': [{'task': 'worker 0', 'start_to_first_step_s': 4.0}]}, {})
    return attempt, train_dir, progress


def test_faults_are_recorded_with_the_steps_redone_and_the_time_lost(tmp_path):
    attempt, train_dir, progress = _fake_attempts(tmp_path, [(1, 17, 15), (1, 28, 25),
                                                             (0, 40, 40)])
    clock = iter(range(0, 1000, 10))
    lines = []
    summary, _ = recovery.supervise(attempt, train_dir, progress, 3, lines.append,
                                    clock=lambda: float(next(clock)))
    recovered = summary['recovery']
    assert summary['status'] == 0 and recovered['restarts'] == 2
    assert [f['steps_redone'] for f in recovered['faults']] == [2, 3]
    assert recovered['steps_redone'] == 5
    assert recovered['faults'][0]['failed'] == {'worker 0': 'exit status 1',
                                                'worker 1': 'killed by SIGKILL'}
    # Each fault: the next attempt's 4 s to its first step, plus the work since the checkpoint.
    assert all(f['restart_to_first_step_s'] == 4.0 for f in recovered['faults'])
    assert recovered['time_lost_s'] == pytest.approx(
        sum(f['since_checkpoint_s'] + 4.0 for f in recovered['faults']))
    assert lines[0].startswith('fault 1: worker 0 exit status 1, worker 1 killed by SIGKILL; '
                               'global step 17 reached, resuming from checkpoint step 15 '
                               '(2 steps to redo); restart 1 of 3')


def test_an_attempt_that_took_no_step_redoes_nothing(tmp_path):
    # The second attempt is hit while it starts: the log's last line is the first attempt's.
    attempt, train_dir, progress = _fake_attempts(tmp_path, [(1, 17, 15), (1, None, 15),
                                                             (0, 30, 30)])
    lines = []
    summary, _ = recovery.supervise(attempt, train_dir, progress, 3, lines.append)
    first, second = summary['recovery']['faults']
    assert (first['reached_step'], first['steps_redone']) == (17, 2)
    assert (second['reached_step'], second['steps_redone']) == (None, 0)
    assert 'no step taken, resuming from checkpoint step 15 (0 steps to redo)' in lines[1]


def test_restarts_end_when_they_run_out_or_a_signal_stopped_the_job(tmp_path):
    attempt, train_dir, progress = _fake_attempts(tmp_path, [(1, 7, 5), (1, 9, 5)])
    summary, _ = recovery.supervise(attempt, train_dir, progress, 1, lambda line: None)
    assert summary['status'] == 1 and summary['recovery']['restarts'] == 1
    attempt, train_dir, progress = _fake_attempts(tmp_path, [(143, 7, 5)])
    summary, _ = recovery.supervise(attempt, train_dir, progress, 3, lambda line: None)
    assert summary['status'] == 143 and summary['recovery']['restarts'] == 0


class _Killer(io.TextIOBase):
    """The job's output stream: kills `victim` (SIGKILL) once the chief's output has shown
    `after`, in the first attempt only."""

    def __init__(self, victim, after):
        self._victim, self._after = victim, after
        self._pids, self._lock = {}, threading.Lock()
        self.killed, self.text = False, []

    def write(self, text):
        with self._lock:
            self.text.append(text)
            started = re.search(r'started (\w+ \d+)(?: \(forked\))?: pid (\d+)', text)
            if started:
                self._pids[started.group(1)] = int(started.group(2))
            if not self.killed and text.startswith('[worker 0] ') and self._after in text:
                os.kill(self._pids[self._victim], signal.SIGKILL)
                self.killed = True
        return len(text)


@pytest.mark.cluster
@pytest.mark.slow
def test_a_job_that_loses_a_worker_restarts_and_ends_at_its_target_step(tmp_path):
    train_dir = str(tmp_path / 'train')
    # 40 steps of about 50 ms, a checkpoint every 5; worker 1 is killed after step 15.
    args = jobs.SMALL + ['--train_dir=' + train_dir, '--save_model_steps=5',
                         '--num_batches=34', '--num_warmup_batches=6', '--display_every=1',
                         '--straggler_workers=0,1', '--straggler_delay_ms=50',
                         '--peer_timeout_s=5', '--step_timeout_s=10']
    out = _Killer('worker 1', 'step 15\t')
    started = time.monotonic()
    summary, results = recovery.launch_recovering(1, 2, args, 2, say=out.write, out=out,
                                                  timeout_s=jobs.JOB_TIMEOUT_S)
    assert out.killed and summary['status'] == 0, ''.join(out.text)[-3000:]
    recovered = summary['recovery']
    assert recovered['restarts'] == 1
    fault = recovered['faults'][0]
    # The killed worker is the fault; whatever the launcher ended after it is not blamed.
    assert fault['failed'] == {'worker 1': 'killed by SIGKILL'}, fault
    # Resumed from a checkpoint no further back than its interval, and no step past the target.
    assert 0 <= fault['steps_redone'] <= 5 and fault['resumed_step'] >= 15 - 5
    assert recovery.checkpoint_step(train_dir) == 40
    assert results[('worker', 0)]['global_step'] == 40
    assert results[('worker', 0)]['start_global_step'] == fault['resumed_step']
    assert time.monotonic() - started < 2 * jobs.JOB_TIMEOUT_S
    # Each attempt ran in a network of its own where it could (`private_net`); none is left.
    assert not jobs.namespaces()
    # What the job's JSON tells of each worker: its start, phase by phase, and its losses.
    chief = summary['tasks'][0]
    assert list(chief['startup_s']) == ['import', 'peers', 'graph', 'session', 'first_step']
    assert sum(chief['startup_s'].values()) == pytest.approx(chief['start_to_first_step_s'])
    assert all(k in chief for k in ('first_loss', 'last_loss', 'final_loss'))

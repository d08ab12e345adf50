"""The forkserver: which commands it forks, what a fork's caller sees, and that a task never
outlives the launcher that asked for it. The suite's own server (conftest) serves these."""
import os
import signal
import subprocess
import sys
import time

import pytest

from tfhp.launcher import forked_task
from tfhp.launcher import hand_started

LONG = ['--model=trivial', '--image_size=8', '--batch_size=2', '--num_classes=10',
        '--num_batches=1000000', '--display_every=10']


def _tfhp(*args):
    return [sys.executable, '-m', 'tfhp'] + list(args)


def test_forkable_takes_tfhp_alone_or_in_a_namespace_and_refuses_anything_else():
    assert forked_task.forkable(_tfhp('--a=1')) == (None, ['--a=1'])
    assert forked_task.forkable(['ip', 'netns', 'exec', 'ns1'] + _tfhp('--b')) == ('ns1', ['--b'])
    for argv in ([sys.executable, '-m', 'tfhp.launch'], [sys.executable, '-c', 'pass'],
                 ['ip', 'netns', 'exec', 'ns1', 'sh']):
        with pytest.raises(forked_task.Refused, match='not a `python -m tfhp` command'):
            forked_task.forkable(argv)


def test_a_fork_runs_tfhp_with_its_arguments_output_and_exit_status(forkserver_for_every_job):
    task = forked_task.start(_tfhp('--model=no_such_model'), dict(os.environ), subprocess.PIPE,
                             cwd=hand_started.ROOT)
    assert isinstance(task, forked_task.ForkedTask)
    output = task.stdout.read()
    assert task.wait(timeout=60) == 2
    assert '--model' in output and 'no_such_model' in output, output


def _training_fork():
    """A fork training LONG, once it has printed its 10th step."""
    task = forked_task.start(_tfhp(*LONG), dict(os.environ), subprocess.PIPE,
                             cwd=hand_started.ROOT)
    for line in task.stdout:
        if line.startswith('step 10\t'):
            return task
    raise AssertionError('the fork ended before its 10th step: %s' % task.wait(timeout=30))


def test_a_killed_fork_reports_the_signal_as_popen_does(forkserver_for_every_job):
    task = _training_fork()
    assert task.poll() is None
    task.kill()
    assert task.wait(timeout=30) == -signal.SIGKILL
    assert not os.path.exists('/proc/%d' % task.pid)


def test_a_fork_ends_when_the_launcher_that_asked_for_it_dies(forkserver_for_every_job,
                                                              tmp_path):
    # A launcher killed outright cannot end its tasks; its forkserver connection closing does.
    client = ('import os, subprocess, sys, time\n'
              'from tfhp.launcher import forked_task\n'
              'task = forked_task.start(%r, dict(os.environ), open(%r, "w"))\n'
              'print(task.pid, flush=True)\n'
              'time.sleep(300)\n' % (_tfhp(*LONG), str(tmp_path / 'task.log')))
    launcher = subprocess.Popen([sys.executable, '-c', client], stdout=subprocess.PIPE, text=True,
                                cwd=hand_started.ROOT)
    try:
        pid = int(launcher.stdout.readline())
        deadline = time.monotonic() + 120
        while 'step 10\t' not in (tmp_path / 'task.log').read_text():
            assert time.monotonic() < deadline, (tmp_path / 'task.log').read_text()[-2000:]
            time.sleep(0.1)
        launcher.kill()
        launcher.wait(timeout=10)
        gone = time.monotonic() + 5
        while os.path.exists('/proc/%d' % pid) and time.monotonic() < gone:
            time.sleep(0.05)
        assert not os.path.exists('/proc/%d' % pid)
    finally:
        hand_started.end(launcher)


def test_what_a_fork_cannot_take_is_started_by_exec_saying_why(forkserver_for_every_job):
    said = []
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS='0')
    proc = forked_task.start(_tfhp('--model=no_such_model'), env, subprocess.PIPE, say=said.append)
    assert isinstance(proc, subprocess.Popen)
    assert proc.wait(timeout=120) == 2
    proc.stdout.close()
    assert said == ['started by exec, not by the forkserver at %s: its TF_ENABLE_ONEDNN_OPTS '
                    'differs from the forkserver\'s' % forkserver_for_every_job]
    proc = forked_task.start([sys.executable, '-c', 'print(7)'], dict(os.environ),
                            subprocess.PIPE, say=said.append)
    assert proc.stdout.read() == '7\n' and proc.wait(timeout=30) == 0
    proc.stdout.close()
    assert 'not a `python -m tfhp` command' in said[-1]


def test_without_a_server_named_every_task_is_started_by_exec():
    env = {k: v for k, v in os.environ.items() if k != forked_task.ENVIRONMENT_VARIABLE}
    proc = forked_task.start([sys.executable, '-c', 'print(5)'], env, subprocess.PIPE)
    assert isinstance(proc, subprocess.Popen)
    assert proc.stdout.read() == '5\n' and proc.wait(timeout=30) == 0
    proc.stdout.close()


def test_a_fork_whose_keeper_died_is_killed_and_reported_so(forkserver_for_every_job):
    task = _training_fork()
    with open('/proc/%d/stat' % task.pid) as f:
        keeper = int(f.read().rsplit(')', 1)[1].split()[1])
    os.kill(keeper, signal.SIGKILL)
    assert task.wait(timeout=30) == -signal.SIGKILL
    gone = time.monotonic() + 5
    while os.path.exists('/proc/%d' % task.pid) and time.monotonic() < gone:
        time.sleep(0.05)
    assert not os.path.exists('/proc/%d' % task.pid)

"""Helpers for tests that run whole jobs: real processes on loopback ports, every one bounded.

Jobs run the trivial model at 8x8 with 10 classes, so a step costs milliseconds and a job is
mostly TensorFlow's import in each process.
"""
import json
import os
import signal
import subprocess
import sys
import time

from tfhp import launch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = ['--model=trivial', '--image_size=8', '--batch_size=2', '--num_classes=10',
         '--num_warmup_batches=2', '--display_every=1000', '--weight_decay=0']
JOB_TIMEOUT_S = 240


def end(proc):
    """Ends a process group started with start_new_session, if it is still running."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def launch_job(tmp_path, num_ps, num_workers, *tfhp_args, launcher_args=()):
    """Runs a job through `python -m tfhp.launch`; returns (exit status, summary, output)."""
    result = tmp_path / ('job_%d.jsonl' % time.monotonic_ns())
    argv = [sys.executable, '-m', 'tfhp.launch', '--num_ps=%d' % num_ps,
            '--num_workers=%d' % num_workers, '--result_file=%s' % result,
            '--timeout_s=%d' % (JOB_TIMEOUT_S - 30)] + list(launcher_args) + ['--'] + SMALL + list(
                tfhp_args)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT, start_new_session=True)
    try:
        output = proc.communicate(timeout=JOB_TIMEOUT_S)[0]
    finally:
        end(proc)
    summary = json.loads(result.read_text().splitlines()[-1]) if result.exists() else None
    return proc.returncode, summary, output


class HandStarted:
    """A job whose tasks are started one by one, as on separate machines (each its own
    process group, its output in a log file), so a test can kill, stop or restart any of them.

    Args:
      tmp_path: where logs and results go.
      num_ps, num_workers: task counts.
      args: tfhp flags of every task (SMALL is added).
    """

    def __init__(self, tmp_path, num_ps, num_workers, args):
        self.tmp_path = tmp_path
        self.commands = launch.task_commands(num_ps, num_workers, SMALL + list(args),
                                             str(tmp_path))
        self.procs = {}
        self.started = {}

    def start(self, task, argv=None):
        """Starts `task` (again, for a restart) with its command or `argv`."""
        log = open(self.log_path(task), 'a')
        self.procs[task] = subprocess.Popen(argv or self.commands[task], stdout=log,
                                            stderr=subprocess.STDOUT, cwd=ROOT,
                                            start_new_session=True)
        self.started[task] = time.monotonic()
        log.close()

    def start_all(self):
        for task in self.commands:
            self.start(task)
        return self

    def log_path(self, task):
        return self.tmp_path / ('%s_%d.log' % task)

    def log(self, task):
        return self.log_path(task).read_text()

    def address(self, task):
        job, index = task
        flag = [a for a in self.commands[task] if a.startswith('--%s_hosts=' % job)][0]
        return flag.split('=', 1)[1].split(',')[index]

    def wait_for_line(self, task, text, timeout_s=JOB_TIMEOUT_S):
        """Waits until `task`'s log has `text` (e.g. a step line)."""
        deadline = time.monotonic() + timeout_s
        while text not in self.log(task):
            assert time.monotonic() < deadline and self.procs[task].poll() is None, (
                '%s never printed %r:\n%s' % (task, text, self.log(task)[-3000:]))
            time.sleep(0.1)

    def signal(self, task, signum):
        os.kill(self.procs[task].pid, signum)

    def wait(self, tasks, bound_s):
        """Waits at most bound_s for `tasks` to end by themselves.

        Returns:
          {task: (exit status, seconds from the call to its end)}; a task still running at the
          bound is killed and reported with status None.
        """
        start = time.monotonic()
        ended = {}
        while len(ended) < len(tasks) and time.monotonic() - start < bound_s:
            for task in tasks:
                if task not in ended and self.procs[task].poll() is not None:
                    ended[task] = (self.procs[task].returncode, time.monotonic() - start)
            time.sleep(0.05)
        for task in tasks:
            if task not in ended:
                end(self.procs[task])
                ended[task] = (None, time.monotonic() - start)
        return ended

    def result(self, task):
        """The last JSON result line a worker wrote."""
        with open(self.tmp_path / ('%s_%d.jsonl' % task)) as f:
            return json.loads(f.read().splitlines()[-1])

    def end_all(self):
        for proc in self.procs.values():
            end(proc)

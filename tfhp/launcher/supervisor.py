"""Runs a job's task processes: starts them, relays their output line by line, watches them and
ends them, every wait bounded by the tasks' own timeouts. Imports no TensorFlow."""
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time

from tfhp.launcher import figures
from tfhp.launcher import plan

def _pump(name, stream, out, lock):
    for line in stream:
        with lock:
            out.write('[%s] %s' % (name, line))
            out.flush()


def describe_status(code):
    """A task's exit status in words: 'exit status 1', 'stopped by SIGTERM (143)', ..."""
    if code is None:
        return 'still running'
    if code < 0:
        return 'killed by %s' % signal.Signals(-code).name
    if code > 128 and code - 128 in signal.valid_signals():
        return 'stopped by %s (exit status %d)' % (signal.Signals(code - 128).name, code)
    return 'exit status %d' % code


def _end_tasks(processes, grace_s):
    """SIGTERM every running task (a graceful stop), then SIGKILL those still running after
    grace_s; returns the tasks that had to be killed."""
    for proc in processes.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    killed = []
    for task, proc in processes.items():
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            killed.append(task)
    return killed


class _Signals:
    """SIGTERM and SIGINT to the launcher, noted for its watch loop (which runs in Python, so
    the handler runs at once); a second one kills every task at once."""

    def __init__(self):
        self.signum = None
        self._processes = {}
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def watch(self, processes):
        self._processes = processes

    def _handle(self, signum, frame):
        del frame
        if self.signum is None:
            self.signum = signum
            return
        for proc in self._processes.values():
            if proc.poll() is None:
                proc.kill()


def run_job(commands, timeout_s=600.0, keep_going=False, out=None, bounds=None,
            lean_malloc=True):
    """Starts every task, relays its output, and waits for the job to end.

    Every wait is bounded by the tasks' own timeouts (`task_bounds`): serving tasks get
    --peer_timeout_s (+ a margin) to exit after the last worker, since that is how long they
    wait for a worker that vanished; a stop or a failed job's end gets one step and two peer
    timeouts before its tasks are killed.

    Args:
      commands: {(job, index): argv} from `task_commands`.
      timeout_s: bound on the whole job.
      keep_going: a failed non-chief worker does not end the job (asynchronous training
        goes on without it); the launcher still reports failure at the end.
      out: where task output goes (default: sys.stdout).
      bounds: (peer_timeout_s, step_timeout_s) of the tasks; default: tfhp's defaults.
      lean_malloc: run the tasks with `plan.LEAN_MALLOC`'s malloc settings.
    Returns:
      (status, launch_times, return_codes, ended): status 0 if every task exited 0, 1 if one
      did not, 128 + N if the launcher got signal N (it then stopped every task); ended: the
      tasks still running when the launcher ended the job (their codes are its doing, not a
      fault of theirs).
    """
    out = out or sys.stdout
    lock = threading.Lock()
    say = functools.partial(_say, out, lock)
    peer_timeout_s, step_timeout_s = bounds or plan.task_bounds([])
    stop_s = step_timeout_s + 2 * peer_timeout_s + plan.MARGIN_S
    env = plan.task_environment(os.environ, lean_malloc)
    processes, launch_times, pumps = {}, {}, []
    with _Signals() as signals:
        signals.watch(processes)
        try:
            for task, argv in commands.items():
                launch_times[task] = time.time()
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, env=env)
                processes[task] = proc
                say('started %s: pid %d' % (figures.task_name(task), proc.pid))
                pump = threading.Thread(target=_pump, args=(figures.task_name(task), proc.stdout, out, lock),
                                        daemon=True)
                pump.start()
                pumps.append(pump)
            status = _watch(processes, timeout_s, peer_timeout_s + plan.MARGIN_S, keep_going, say,
                            signals)
        finally:
            running = [t for t, p in processes.items() if p.poll() is None]
            killed = _end_tasks(processes, stop_s if signals.signum else peer_timeout_s)
            if signals.signum:
                status = 128 + signals.signum
                say('%s: stopped %s' % (signal.Signals(signals.signum).name, ', '.join(
                    '%s (%s%s)' % (figures.task_name(t), describe_status(processes[t].returncode),
                                   ', after %g s' % stop_s if t in killed else '')
                    for t in running) or 'no running task'))
            for pump in pumps:
                pump.join(timeout=5)
    return status, launch_times, {t: p.returncode for t, p in processes.items()}, running


def _say(out, lock, line):
    with lock:
        out.write('[launch] %s\n' % line)
        out.flush()


def _watch(processes, timeout_s, serve_grace_s, keep_going, say, signals):
    deadline = time.monotonic() + timeout_s
    clients = [t for t in processes if t[0] != 'ps']
    essential = [t for t in processes if t[0] != 'worker' or t[1] == 0]
    clients_done_at = None
    named = set()
    while True:
        if signals.signum:
            return 128 + signals.signum
        codes = {t: p.poll() for t, p in processes.items()}
        failed = [t for t, c in codes.items() if c not in (None, 0)]
        for task in failed:
            if task not in named:
                named.add(task)
                if keep_going and task not in essential:
                    say('%s ended (%s); the job goes on without it (--keep_going)'
                        % (figures.task_name(task), describe_status(codes[task])))
        if failed and (not keep_going or any(t in essential for t in failed)):
            task = next(t for t in failed if not keep_going or t in essential)
            say('%s failed (%s); ending the job' % (figures.task_name(task), describe_status(codes[task])))
            return 1
        if all(codes[t] is not None for t in clients):
            clients_done_at = clients_done_at or time.monotonic()
            if all(c is not None for c in codes.values()):
                return 1 if failed else 0
            if time.monotonic() - clients_done_at > serve_grace_s:
                say('%s did not exit within %g s of the last worker (their --peer_timeout_s + '
                    '%g s); ending them' % (', '.join(figures.task_name(t) for t, c in codes.items()
                                                       if c is None), serve_grace_s, plan.MARGIN_S))
                return 1
        if time.monotonic() > deadline:
            say('the job did not end within --timeout_s=%g; ending it' % timeout_s)
            return 1
        time.sleep(0.05)


def read_results(result_dir, tasks):
    """{task: its last result line} of the tasks (of `task_commands`) that wrote one."""
    results = {}
    for job, index in tasks:
        path = os.path.join(result_dir, '%s_%d.jsonl' % (job, index))
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
            if lines:
                results[(job, index)] = json.loads(lines[-1])
    return results

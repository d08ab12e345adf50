"""Runs a job's task processes: starts them, relays their output line by line, watches them and
ends them, every wait bounded by the tasks' own timeouts. Imports no TensorFlow."""
import collections
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import time

from tfhp.launcher import figures
from tfhp.launcher import forked_task
from tfhp.launcher import plan

# A task that exits 1 reacted to a lost peer or an overrun wait (`tfhp.cluster.watchdog`); the
# cause of a failed job is more likely a task that ended otherwise: a setting at fault (2), a
# signal, a crash. How long the launcher waits for one after the first reaction it sees.
REACTION = 1
SETTLE_S = 5.0

JobEnd = collections.namedtuple('JobEnd', [
    'status',        # 0 every task exited 0, 1 one did not, 128 + N the launcher got signal N
    'launch_times',  # {task: epoch seconds}
    'return_codes',  # {task: exit code}
    'ended',         # tasks still running when the launcher ended the job (their codes are
                     # its doing, not a fault of theirs)
    'root_cause',    # (task, exit code, its last line) of a failed job, else None
])


def _pump(name, stream, out, lock, last_lines):
    for line in stream:
        with lock:
            out.write('[%s] %s' % (name, line))
            out.flush()
            if line.strip():
                last_lines[name] = line.strip()


def root_cause(failures):
    """The task at the root of a failed job, of [(task, exit code)] in the order they were
    seen: the first that did not merely react (exit status 1), else the first."""
    return next((f for f in failures if f[1] != REACTION), failures[0])


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
        if not forked_task.wait_or_kill(proc, max(0.0, deadline - time.monotonic())):
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
            lean_malloc=True, linger_s=0.0, on_start=None):
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
      linger_s: the serving tasks' --linger_s: they may serve that much longer after the last
        worker (`plan.linger_s`).
      on_start: called with {task: Popen} once every task has started (a fault injector
        takes them).
    Returns:
      A `JobEnd`. A failed job's root cause is the first task that failed on its own
      (`root_cause`): after a task that merely reacted, the launcher waits up to SETTLE_S for
      the one it reacted to, and names it with its last line.
    """
    out = out or sys.stdout
    lock = threading.Lock()
    say = functools.partial(_say, out, lock)
    peer_timeout_s, step_timeout_s = bounds or plan.task_bounds([])
    stop_s = step_timeout_s + 2 * peer_timeout_s + plan.MARGIN_S
    env = plan.task_environment(os.environ, lean_malloc)
    processes, launch_times, pumps, last_lines = {}, {}, [], {}
    with _Signals() as signals:
        signals.watch(processes)
        try:
            for task, argv in commands.items():
                launch_times[task] = time.time()
                proc = forked_task.start(argv, env, subprocess.PIPE, say=say)
                processes[task] = proc
                say('started %s%s: pid %d' % (figures.task_name(task), ' (forked)' if isinstance(
                    proc, forked_task.ForkedTask) else '', proc.pid))
                pump = threading.Thread(target=_pump, args=(figures.task_name(task), proc.stdout,
                                                            out, lock, last_lines), daemon=True)
                pump.start()
                pumps.append(pump)
            if on_start:
                on_start(dict(processes))
            status, failures = _watch(processes, timeout_s,
                                      peer_timeout_s + linger_s + plan.MARGIN_S,
                                      keep_going, say, signals)
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
    cause = None
    if status == 1 and failures:
        task, code = root_cause(failures)
        cause = (task, code, last_lines.get(figures.task_name(task), ''))
    return JobEnd(status, launch_times, {t: p.returncode for t, p in processes.items()},
                  running, cause)


def _say(out, lock, line):
    with lock:
        out.write('[launch] %s\n' % line)
        out.flush()


def _settle(processes, failures, say):
    """After a task that merely reacted failed first, waits up to SETTLE_S for a task that
    failed on its own, adding each failure seen (in order) to `failures`."""
    deadline = time.monotonic() + SETTLE_S
    while all(code == REACTION for _, code in failures) and time.monotonic() < deadline:
        time.sleep(0.05)
        for task, proc in processes.items():
            if proc.poll() not in (None, 0) and task not in dict(failures):
                failures.append((task, proc.returncode))
    task, code = root_cause(failures)
    reacted = [t for t, _ in failures if t != task]
    say('%s failed (%s)%s; ending the job' % (
        figures.task_name(task), describe_status(code),
        '; %s reacted to it' % ', '.join(figures.task_name(t) for t in reacted)
        if reacted else ''))


def _watch(processes, timeout_s, serve_grace_s, keep_going, say, signals):
    """Watches the tasks until the job ends; returns (status, [(task, exit code)] of the failed
    tasks in the order they were seen)."""
    deadline = time.monotonic() + timeout_s
    clients = [t for t in processes if t[0] != 'ps']
    essential = [t for t in processes if t[0] != 'worker' or t[1] == 0]
    clients_done_at = None
    failures = []
    while True:
        if signals.signum:
            return 128 + signals.signum, failures
        codes = {t: p.poll() for t, p in processes.items()}
        failed = [t for t, c in codes.items() if c not in (None, 0)]
        for task in failed:
            if task not in dict(failures):
                failures.append((task, codes[task]))
                if keep_going and task not in essential:
                    say('%s ended (%s); the job goes on without it (--keep_going)'
                        % (figures.task_name(task), describe_status(codes[task])))
        if failed and (not keep_going or any(t in essential for t in failed)):
            _settle(processes, failures, say)
            return 1, failures
        if all(codes[t] is not None for t in clients):
            clients_done_at = clients_done_at or time.monotonic()
            if all(c is not None for c in codes.values()):
                return (1 if failed else 0), failures
            if time.monotonic() - clients_done_at > serve_grace_s:
                lingering = ', '.join(figures.task_name(t) for t, c in codes.items() if c is None)
                say('%s did not exit within %g s of the last worker (their --peer_timeout_s '
                    '+ --linger_s + %g s); ending them' % (lingering, serve_grace_s,
                                                           plan.MARGIN_S))
                return 1, failures
        if time.monotonic() > deadline:
            say('the job did not end within --timeout_s=%g; ending it' % timeout_s)
            return 1, failures
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

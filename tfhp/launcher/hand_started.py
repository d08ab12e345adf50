"""A job whose tasks are started one by one, as on separate machines: for fault studies.

`HandStartedJob` starts each task of a job as its own process group on free loopback ports (the
documented multi-machine mode: --job_name, --task_index, --ps_hosts, --worker_hosts), its output
in a log file, so that a study or a test can kill, stop (SIGSTOP), signal or restart any task
and time how the others react (`experiments.fault_bounds`, `tests/cluster/faults_test.py`).
Where this process may create one, the tasks run in a network namespace of their own
(`private_net`), as a launched job's do: nothing outside the job reaches their servers. A
caller that connects to them itself (a client in this process) asks for the machine's network.
Imports no TensorFlow.
"""
import json
import os
import signal
import time

from tfhp.launcher import forked_task
from tfhp.launcher import plan
from tfhp.launcher import private_net

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def end(proc):
    """Ends a process group started with start_new_session, if it is still running."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


class HandStartedJob:
    """A job whose tasks are started one by one, as on separate machines (each its own
    process group, its output in a log file), so a test can kill, stop or restart any of them.

    Args:
      directory: where logs (<job>_<index>.log) and results (<job>_<index>.jsonl) go.
      num_ps, num_workers: task counts.
      args: tfhp flags of every task.
      private: run the tasks in a network namespace of their own where one can be made
        (module doc); False: on the machine's network, for a caller that connects to them.
    """

    def __init__(self, directory, num_ps, num_workers, args, private=True):
        self.directory = str(directory)
        self.commands = plan.task_commands(num_ps, num_workers, list(args), self.directory)
        self.procs = {}
        self.started = {}
        self.network = None
        if private:
            try:
                self.network = private_net.PrivateNetwork()
            except private_net.Unavailable:
                pass  # the machine's network: each task prints the line that says so
        if self.network:
            self.commands = {task: self.network.command(argv)
                             for task, argv in self.commands.items()}

    def start(self, task, argv=None):
        """Starts `task` (again, for a restart) with its command or `argv`."""
        log = open(self.log_path(task), 'a')
        self.procs[task] = forked_task.start(argv or self.commands[task], os.environ, log,
                                             cwd=ROOT, new_session=True)
        self.started[task] = time.monotonic()
        log.close()

    def start_all(self):
        """Starts every task; returns self."""
        for task in self.commands:
            self.start(task)
        return self

    def log_path(self, task):
        return os.path.join(self.directory, '%s_%d.log' % task)

    def log(self, task):
        """What `task` printed so far (every incarnation of it)."""
        with open(self.log_path(task)) as f:
            return f.read()

    def address(self, task):
        """host:port of `task`."""
        job, index = task
        flag = [a for a in self.commands[task] if a.startswith('--%s_hosts=' % job)][0]
        return flag.split('=', 1)[1].split(',')[index]

    def wait_for_line(self, task, text, timeout_s):
        """Waits until `task`'s log has `text` (e.g. a step line).

        Raises:
          RuntimeError: the task ended, or timeout_s passed, first (with the log's end).
        """
        deadline = time.monotonic() + timeout_s
        while text not in self.log(task):
            if time.monotonic() > deadline or self.procs[task].poll() is not None:
                raise RuntimeError('%s %d never printed %r:\n%s'
                                   % (task + (text, self.log(task)[-3000:])))
            time.sleep(0.1)

    def wait_for_servers(self, tasks, timeout_s):
        """Waits until every task of `tasks` listens on its port or has ended, so that what is
        timed next counts from the moment the last of them could take part in the job, not
        from their start-up (TensorFlow's import, seconds on loaded cores).

        Raises:
          RuntimeError: timeout_s passed first, naming the tasks not up.
        """
        deadline = time.monotonic() + timeout_s
        waiting = list(tasks)
        while True:
            waiting = [t for t in waiting if self.procs[t].poll() is None and
                       not private_net.listens(self.procs[t].pid,
                                               int(self.address(t).rsplit(':', 1)[1]))]
            if not waiting:
                return
            if time.monotonic() > deadline:
                raise RuntimeError('%s did not listen within %g s' % (
                    ', '.join('%s %d' % t for t in waiting), timeout_s))
            time.sleep(0.02)

    def signal(self, task, signum):
        """Sends signum to `task` (its process, not its group: as a scheduler would)."""
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
        with open(os.path.join(self.directory, '%s_%d.jsonl' % task)) as f:
            return json.loads(f.read().splitlines()[-1])

    def end_all(self):
        """Kills every task still running (their process groups), then deletes the job's
        network namespace."""
        for proc in self.procs.values():
            end(proc)
        if self.network:
            self.network.close()

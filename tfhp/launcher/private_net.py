"""A job's own network on this machine: one network namespace holding only a loopback.

Why: every task of a job starts TensorFlow's gRPC server, which has no authentication, runs any
op a client sends it (reads and writes files, starts processes) as the task's user, and listens
on every interface of its network (TensorFlow's ServerDef has no bind address; docs/security.md).
The tasks of a job on one machine talk over 127.0.0.1 only, so they need no other interface: in
a namespace of their own, whose only interface is `lo`, nothing outside it can connect to their
ports, neither another user of the machine nor another host.

A process that starts servers in itself (a study's in-process cluster) moves into a namespace
of its own instead (`enter`), before it starts them.

`isolated(commands, say)` creates the namespace and returns the commands run inside it
(`ip netns exec NAME ...`, which the forkserver also takes: `tfhp.launcher.forked_task`). Every
process that connects to the job's ports must be started with `PrivateNetwork.command` too (a
search's clients and its reconnecting tool are). Where this process cannot create a namespace
(not root, no `ip`), the job runs on the machine's network as before, and `isolated` says so
once, naming the ports.

Cleanup: as `tfhp.launcher.links` does. The namespace is named <PREFIX><pid>-<4 hex>-job, so
that `links.cleanup_stale` removes it once its creator is dead (a SIGKILLed launcher); call
`close` after the tasks ended, inside `links.exit_on_sigterm` so that SIGTERM unwinds to it. A
restarted job (`tfhp.launcher.recovery`) gets a namespace per attempt.

Costs a tenth of a second: creating a namespace (after the sweep for stale ones), raising `lo`
and deleting it took about 0.1 s in all on the project's 2-core VM while other work loaded it;
a forked task enters it with one setns.
Imports no TensorFlow.
"""
import contextlib
import ctypes
import os
import secrets
import shutil
import subprocess

from tfhp.launcher import links
from tfhp.launcher import plan

_TIMEOUT_S = 10.0  # Bound on one ip command; they take milliseconds.


class Unavailable(Exception):
    """This process cannot create a network namespace; the message says why."""


def probe():
    """Why this process cannot create a network namespace, or None when it can try."""
    if os.geteuid() != 0:
        return 'a network namespace needs root; this process runs as uid %d' % os.geteuid()
    if shutil.which('ip') is None:
        return 'a network namespace needs `ip` (iproute2), which is not on PATH'
    return None


def _ip(*args):
    result = subprocess.run(('ip',) + args, capture_output=True, text=True, timeout=_TIMEOUT_S,
                            check=False)
    if result.returncode:
        lines = result.stderr.strip().splitlines() or ['exit status %d' % result.returncode]
        raise Unavailable('`ip %s` failed: %s' % (' '.join(args), lines[0]))


class PrivateNetwork:
    """A network namespace whose only interface is a loopback that is up.

    Attributes:
      name: the namespace's name, <prefix><pid>-<4 hex>-job.
    Raises:
      Unavailable: `probe` says why not, or `ip` could not create it (what was created is
        removed).
    """

    def __init__(self, prefix=links.PREFIX):
        why = probe()
        if why:
            raise Unavailable(why)
        links.cleanup_stale(prefix)  # namespaces of launchers that were killed
        self.name = '%s%d-%s-job' % (prefix, os.getpid(), secrets.token_hex(2))
        _ip('netns', 'add', self.name)
        self._closed = False
        try:
            _ip('-n', self.name, 'link', 'set', 'lo', 'up')
        except BaseException:
            self.close()
            raise

    def command(self, argv):
        """`argv` run inside the namespace (`ip netns exec` execs it: same pid)."""
        return ['ip', 'netns', 'exec', self.name] + list(argv)

    def close(self):
        """Deletes the namespace's name; idempotent. Call after the tasks ended: a namespace
        that holds a process lives on, unnamed, until that process exits."""
        if not self._closed:
            subprocess.run(['ip', 'netns', 'delete', self.name], capture_output=True,
                           timeout=_TIMEOUT_S, check=False)  # Gone already is fine.
            self._closed = True


_CLONE_NEWNET = 0x40000000  # <sched.h>


def enter():
    """Moves this process into a new network namespace whose only interface is a loopback that
    is up: the thread that calls it and every thread and process it starts from then on (a
    server started after it listens there only). Call it before any server or session starts.

    Returns:
      None, or why this process stays on the machine's network (`probe`'s reasons, or the
      kernel's refusal).
    Raises:
      Unavailable: the new namespace's loopback could not be raised.
    """
    why = probe()
    if why:
        return why
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(_CLONE_NEWNET) != 0:
        return 'unshare(CLONE_NEWNET) failed: %s' % os.strerror(ctypes.get_errno())
    # A child of this thread, so in the new namespace. Past the unshare there is no way back:
    # a loopback that stays down ends the caller here.
    _ip('link', 'set', 'lo', 'up')
    return None


def listens(pid, port):
    """Whether process `pid` has a TCP socket listening on `port` in its network namespace:
    read from /proc, so that a process in a namespace of its own is seen from outside it."""
    for table in ('tcp', 'tcp6'):
        try:
            with open('/proc/%d/net/%s' % (pid, table)) as f:
                rows = [line.split() for line in f.read().splitlines()[1:]]
        except OSError:  # the process has ended
            return False
        # Columns: sl, local address (hex ip:port), remote address, state (0A: listening).
        if any(row[3] == '0A' and int(row[1].rsplit(':', 1)[1], 16) == port for row in rows):
            return True
    return False


def ports(commands):
    """The TCP ports of a job's tasks, ascending, read from their commands' address flags."""
    argv = next(iter(commands.values()))
    addresses = []
    for flag in ('ps_hosts', 'worker_hosts', 'controller_host'):
        addresses += [a for a in (plan.flag_value(argv, flag) or '').split(',') if a]
    return sorted(int(a.rsplit(':', 1)[1]) for a in addresses)


def open_warning(commands, why):
    """The line that says a job's ports are open to the machine's network, and why."""
    return ('the job\'s tasks listen on ports %s of every interface of this machine, open to '
            'anyone who reaches it, and a TensorFlow server runs any op it is sent: no network '
            'of its own could be made for the job (%s). See docs/security.md'
            % (', '.join(str(p) for p in ports(commands)), why))


@contextlib.contextmanager
def isolated(commands, say, lingering=False):
    """Yields {task: argv} of `commands` run inside a `PrivateNetwork`, deleted when the block
    ends; where none can be created, yields `commands` as they are after saying so once
    (`open_warning`).

    Args:
      commands: {(job, index): argv} of a job's tasks on loopback (`plan.task_commands`).
      say: called with the warning line, or with where to reach lingering tasks.
      lingering: the serving tasks linger (--linger_s) for a client started by hand, such as
        `python -m tfhp.reconnect`: say the namespace it must run in.
    """
    try:
        network = PrivateNetwork()
    except Unavailable as e:
        say(open_warning(commands, e))
        yield commands
        return
    if lingering:
        say('the job\'s tasks run in network namespace %s, out of reach of every other '
            'process: a client of the lingering tasks must run there (ip netns exec %s python '
            '-m tfhp.reconnect ...)' % (network.name, network.name))
    try:
        yield {task: network.command(argv) for task, argv in commands.items()}
    finally:
        network.close()

"""Tasks started as forks of a process that has already imported TensorFlow and tfhp: the
launcher's side of the forkserver (`tfhp.forkserver`, which forks them).

Every task of a job is `python -m tfhp ...`, and most of a small task's start is importing
TensorFlow: 2.3-3.4 s of a core, by the machine. A forkserver pays it once. Start one with
`python -m tfhp.forkserver --socket=PATH` (or `spawn`) and name it in the environment of
whatever launches jobs (TFHP_FORKSERVER=PATH); `supervisor.run_job`,
`hand_started.HandStartedJob` and the cluster search then start the tasks they can through it
(`start`), each a fork with the task's arguments, environment, directory and network namespace.

What a fork cannot take from its request is refused, and the task is started the usual way
(`start` says why): a command that is not `python -m tfhp` (alone or after `ip netns exec
NAME`), or an environment whose variables TensorFlow or Python read when they start
(`STARTUP_VARIABLES`) differ from the server's.

The protocol: one unix-socket connection per task. The client sends one JSON line (the tfhp
arguments, directory, environment, namespace, whether to start a new session) with the task's
output file descriptor; it gets back one line with the task's pid (or why it was refused), and
later one with its exit status (as Popen's: -N for signal N). The task's parent is the server's
keeper of that connection, not the caller: `ForkedTask` gives the caller Popen's interface
(poll, wait, send_signal, kill, terminate, pid, returncode). When the connection closes first
(its launcher died) the keeper kills the task: a task never outlives the launcher that started
it.

Imports no TensorFlow.
"""
import contextlib
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

from tfhp import startup

ENVIRONMENT_VARIABLE = 'TFHP_FORKSERVER'
# Variables read when TensorFlow is imported or Python starts: a fork inherits the server's
# reading of them, so a request whose values differ is started the usual way.
STARTUP_VARIABLES = ('TF_CPP_MIN_LOG_LEVEL', 'TF_CPP_MAX_VLOG_LEVEL', 'TF_CPP_VMODULE',
                     'TF_USE_LEGACY_KERAS', 'TF_ENABLE_ONEDNN_OPTS', 'PYTHONPATH',
                     'PYTHONHASHSEED', 'PYTHONOPTIMIZE', 'LD_PRELOAD', 'LD_LIBRARY_PATH')
_CONNECT_TIMEOUT_S = 30.0
POLL_S = 0.05


class Refused(Exception):
    """The forkserver cannot start this task as asked; the message says why."""


def forkable(argv, python=sys.executable):
    """(namespace or None, tfhp arguments) of an argv the forkserver can start: `python -m tfhp
    ARGS`, alone or after `ip netns exec NAME`. Raises Refused for any other."""
    namespace = None
    if argv[:3] == ['ip', 'netns', 'exec'] and len(argv) > 3:
        namespace, argv = argv[3], argv[4:]
    if argv[:3] != [python, '-m', 'tfhp']:
        raise Refused('not a `python -m tfhp` command: %s' % ' '.join(argv[:4]))
    return namespace, list(argv[3:])


def startup_values(environ):
    """{name: value} of STARTUP_VARIABLES in `environ`, with what tfhp's entry points set by
    default (`startup.SETTINGS`) where it sets none."""
    values = dict(startup.SETTINGS)
    values.update(environ)
    return {name: values.get(name) for name in STARTUP_VARIABLES}


def send(conn, message, fds=()):
    """Sends `message` as one JSON line on the unix socket `conn`, with file descriptors."""
    data = (json.dumps(message) + '\n').encode()
    if fds:
        socket.send_fds(conn, [data], list(fds))
    else:
        conn.sendall(data)


class Lines:
    """Newline-ended JSON messages from a socket, read without blocking past a deadline."""

    def __init__(self, conn):
        self.conn = conn
        self.buffer = b''

    def read(self, timeout_s):
        """The next message; None when none came within timeout_s; EOFError when the peer
        closed first."""
        deadline = time.monotonic() + timeout_s
        while b'\n' not in self.buffer:
            left = max(0.0, deadline - time.monotonic())
            if not select.select([self.conn], [], [], left)[0]:
                return None
            chunk = self.conn.recv(65536)
            if not chunk:
                raise EOFError('the forkserver closed the connection')
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b'\n', 1)
        return json.loads(line)


class ForkedTask:
    """A task the forkserver started, with Popen's interface for its caller.

    Args:
      path: the forkserver's socket.
      argv: the task's command (`forkable`).
      env: its environment.
      out_fd: where its stdout and stderr go (the caller keeps its own copy).
      cwd: its directory (default: this one).
      new_session: start it in a session (and process group) of its own.
    Raises:
      Refused: the command or environment cannot be forked, or the server said why not.
      OSError: no server answers at path.
    """

    def __init__(self, path, argv, env, out_fd, cwd=None, new_session=False):
        namespace, args = forkable(list(argv))
        self.args = list(argv)
        self.stdout = None
        self.returncode = None
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._conn.settimeout(_CONNECT_TIMEOUT_S)
        try:
            self._conn.connect(path)
            self._lines = Lines(self._conn)
            send(self._conn, {'args': args, 'cwd': cwd or os.getcwd(), 'env': dict(env),
                               'namespace': namespace, 'new_session': new_session}, [out_fd])
            answer = self._lines.read(_CONNECT_TIMEOUT_S)
        except OSError:
            self._conn.close()
            raise
        except EOFError:
            self._conn.close()
            raise Refused('the forkserver at %s closed the connection unanswered' % path)
        if not answer or 'pid' not in answer:
            self._conn.close()
            raise Refused((answer or {}).get('refused') or
                          'no answer from the forkserver at %s within %g s'
                          % (path, _CONNECT_TIMEOUT_S))
        self.pid = answer['pid']

    def poll(self):
        """The task's exit status (-N: killed by signal N), or None while it runs."""
        if self.returncode is None:
            try:
                message = self._lines.read(0)
            except EOFError:  # its keeper died unanswered: nothing would report its end
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
                message = {'status': -signal.SIGKILL}
            if message is not None:
                self.returncode = message['status']
                self._conn.close()
        return self.returncode

    def wait(self, timeout=None):
        """Waits for the task to end; subprocess.TimeoutExpired after timeout seconds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.poll() is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(POLL_S)
        return self.returncode

    def send_signal(self, signum):
        """Sends signum to the task, unless it has ended."""
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


def wait_or_kill(proc, timeout_s):
    """Waits for `proc` (a Popen or a `ForkedTask`) up to timeout_s; past it, kills it and
    waits. Returns whether it ended by itself (its status is then proc.returncode)."""
    try:
        proc.wait(timeout_s)
        return True
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return False


def start(argv, env, stdout, cwd=None, new_session=False, say=None):
    """Starts a task: through the forkserver env names (ENVIRONMENT_VARIABLE) where it can,
    else with subprocess.Popen. Its stderr goes where its stdout does.

    Args:
      argv, env, cwd, new_session: the task's command, environment, directory, and whether it
        gets a session of its own.
      stdout: subprocess.PIPE (the handle's stdout is then a text stream of its output) or a
        file object.
      say: called with a line when a forkserver is named but the task is started otherwise.
    Returns:
      A Popen or a `ForkedTask`.
    """
    path = env.get(ENVIRONMENT_VARIABLE)
    if path:
        try:
            if stdout == subprocess.PIPE:
                read_fd, write_fd = os.pipe()
                try:
                    task = ForkedTask(path, argv, env, write_fd, cwd, new_session)
                except BaseException:
                    os.close(read_fd)
                    raise
                finally:
                    os.close(write_fd)
                task.stdout = open(read_fd, 'r')
                return task
            return ForkedTask(path, argv, env, stdout.fileno(), cwd, new_session)
        except (Refused, OSError) as e:
            if say:
                say('started by exec, not by the forkserver at %s: %s' % (path, e))
    return subprocess.Popen(argv, stdout=stdout, stderr=subprocess.STDOUT, text=True, env=env,
                            cwd=cwd, start_new_session=new_session)


def spawn(path, log, timeout_s=120.0):
    """Starts a forkserver at `path` that ends with this process, its output in the file
    object `log`; returns its Popen once it listens.

    Raises:
      RuntimeError: it ended, or did not listen within timeout_s (naming its log's end).
    """
    proc = subprocess.Popen([sys.executable, '-m', 'tfhp.forkserver', '--socket=%s'
                             % path, '--exit_with_parent'], stdout=log, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL)
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait()
            raise RuntimeError('the forkserver at %s did not start within %g s (exit status %s); '
                               'its output is in %s' % (path, timeout_s, proc.returncode,
                                                        log.name))
        time.sleep(POLL_S)
    return proc



"""Tasks started as forks of a process that has already imported TensorFlow and tfhp.

Every task of a job is `python -m tfhp ...`, and most of a small task's start is importing
TensorFlow: 2.3-3.4 s of a core, by the machine (`startup`). A forkserver pays it once: it
imports TensorFlow and tfhp's modules, then forks one process per task it is asked for, which
runs `python -m tfhp` with the task's arguments, environment, directory and network namespace.
Start one with `python -m tfhp.launcher.forkserver --socket=PATH` and name it in the
environment of whatever launches jobs (TFHP_FORKSERVER=PATH); `supervisor.run_job` and
`hand_started.HandStartedJob` then start the tasks they can through it (`start`).

What a fork cannot take from its request, it refuses, and the task is started the usual way
(`start` says why on the launcher's output): a command that is not `python -m tfhp` (with or
without `ip netns exec NAME` before it), or an environment whose variables TensorFlow or Python
read when they start (`STARTUP_VARIABLES`) differ from the server's. glibc's malloc settings
(`plan.LEAN_MALLOC`) are read at start too; a fork applies them with mallopt.

One unix-socket connection per task. The client sends one JSON line (the tfhp arguments,
directory, environment, namespace, whether to start a new session) and the task's output file
descriptor. The server forks a keeper for the connection and goes back to accept; the keeper
forks the task, answers its pid, waits for it and answers its exit status (as Popen's: -N for
signal N). If the connection closes first (its launcher died), the keeper kills the task, so a
task never outlives the launcher that started it. The keeper, not the caller, is the task's
parent: `ForkedTask` gives the caller Popen's interface (poll, wait, send_signal, kill,
terminate, pid, returncode).

Imports no TensorFlow, except in the server.
"""
import argparse
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
import time

ENVIRONMENT_VARIABLE = 'TFHP_FORKSERVER'
# Variables read when TensorFlow is imported or Python starts: a fork inherits the server's
# reading of them, so a request whose values differ is started the usual way.
STARTUP_VARIABLES = ('TF_CPP_MIN_LOG_LEVEL', 'TF_CPP_MAX_VLOG_LEVEL', 'TF_CPP_VMODULE',
                     'TF_USE_LEGACY_KERAS', 'TF_ENABLE_ONEDNN_OPTS', 'PYTHONPATH',
                     'PYTHONHASHSEED', 'PYTHONOPTIMIZE', 'LD_PRELOAD', 'LD_LIBRARY_PATH')
# glibc reads these at start; a fork sets them with mallopt (its parameter numbers).
_MALLOPT = {'MALLOC_ARENA_MAX': -8, 'MALLOC_MMAP_THRESHOLD_': -3, 'MALLOC_TRIM_THRESHOLD_': -1}
_CLONE_NEWNET = 0x40000000
_CONNECT_TIMEOUT_S = 30.0
_POLL_S = 0.05


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


def _startup_values(environ):
    from tfhp import startup  # pylint: disable=g-import-not-at-top
    values = dict(startup.SETTINGS)
    values.update(environ)
    return {name: values.get(name) for name in STARTUP_VARIABLES}


def _send(conn, message, fds=()):
    data = (json.dumps(message) + '\n').encode()
    if fds:
        socket.send_fds(conn, [data], list(fds))
    else:
        conn.sendall(data)


class _Lines:
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
            self._lines = _Lines(self._conn)
            _send(self._conn, {'args': args, 'cwd': cwd or os.getcwd(), 'env': dict(env),
                               'namespace': namespace, 'new_session': new_session}, [out_fd])
            answer = self._lines.read(_CONNECT_TIMEOUT_S)
        except (OSError, EOFError):
            self._conn.close()
            raise
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
            except EOFError:  # the keeper itself was killed; its task went with it
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
            time.sleep(_POLL_S)
        return self.returncode

    def send_signal(self, signum):
        """Sends signum to the task, unless it has ended."""
        if self.poll() is None:
            os.kill(self.pid, signum)

    def terminate(self):
        self.send_signal(signal.SIGTERM)

    def kill(self):
        self.send_signal(signal.SIGKILL)


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


def _enter_namespace(name):
    fd = os.open(os.path.join('/var/run/netns', name), os.O_RDONLY)
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.setns(fd, _CLONE_NEWNET) != 0:
            error = ctypes.get_errno()
            raise OSError(error, 'setns into network namespace %s: %s'
                          % (name, os.strerror(error)))
    finally:
        os.close(fd)


def _set_malloc(env):
    libc = ctypes.CDLL(None)
    for name, parameter in _MALLOPT.items():
        if name in env:
            libc.mallopt(parameter, int(env[name]))


def _run_task(request, out_fd):
    """In the forked task: becomes `python -m tfhp ARGS` as asked, runs it, returns its exit
    status."""
    import runpy  # pylint: disable=g-import-not-at-top
    import threading  # pylint: disable=g-import-not-at-top
    from tfhp import startup  # pylint: disable=g-import-not-at-top
    if request['new_session']:
        os.setsid()
    if request['namespace']:
        _enter_namespace(request['namespace'])
    os.dup2(out_fd, 1)
    os.dup2(out_fd, 2)
    os.close(out_fd)
    os.chdir(request['cwd'])
    os.environ.clear()
    os.environ.update(request['env'])
    _set_malloc(request['env'])
    if os.environ.get('PYTHONUNBUFFERED'):
        sys.stdout.reconfigure(line_buffering=True, write_through=True)
        sys.stderr.reconfigure(line_buffering=True, write_through=True)
    if 'numpy' in sys.modules:  # numpy's global generator would repeat the server's draws
        sys.modules['numpy'].random.seed()
    sys.argv = [os.path.join(os.path.dirname(startup.__file__), '__main__.py')] + request['args']
    sys.path[0] = request['cwd']
    startup.MARKS.clear()
    startup.prepare_process()
    try:
        runpy.run_module('tfhp', run_name='__main__', alter_sys=True)
        code = 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
    threading._shutdown()  # pylint: disable=protected-access  # as the interpreter's exit does
    return code


def _keep(conn, listener):
    """In a keeper (a fork of the server, one per connection): starts the task asked for,
    answers its pid and then its exit status; kills it if the connection closes first."""
    for signum in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    listener.close()
    data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 1)
    while not data.endswith(b'\n'):
        chunk = conn.recv(1 << 16)
        if not chunk:
            return
        data += chunk
    request = json.loads(data.decode())
    own = _startup_values(os.environ)
    differing = [n for n, v in _startup_values(request['env']).items() if v != own[n]]
    if not fds or differing:
        _send(conn, {'refused': 'its %s differs from the forkserver\'s' % ', '.join(differing)
                     if differing else 'no output file descriptor came'})
        return
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            conn.close()
            code = _run_task(request, fds[0])
        except BaseException:  # pylint: disable=broad-except
            import traceback  # pylint: disable=g-import-not-at-top
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # pylint: disable=protected-access
    os.close(fds[0])
    _send(conn, {'pid': pid})
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            _send(conn, {'status': os.waitstatus_to_exitcode(status)})
            return
        if select.select([conn], [], [], _POLL_S)[0] and not conn.recv(1):
            os.kill(pid, signal.SIGKILL)  # its launcher is gone
            os.waitpid(pid, 0)
            return


def _warm_up():
    """Imports what every task imports, so that a fork starts with it."""
    from tfhp import cli  # pylint: disable=g-import-not-at-top,unused-import
    from tfhp import compat  # pylint: disable=g-import-not-at-top,unused-import
    from tfhp import benchmark  # pylint: disable=g-import-not-at-top,unused-import
    from tfhp.cluster import roles  # pylint: disable=g-import-not-at-top,unused-import


def serve(path, parent_pid=None):
    """Listens at `path` and forks a keeper per connection (`_keep`), until parent_pid (if
    given) is no longer this process's parent or SIGTERM comes. Removes the socket at the end.
    """
    _warm_up()
    own_pid = os.getpid()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # keepers are reaped by the kernel
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    print('forkserver ready at %s (pid %d)' % (path, own_pid), flush=True)
    try:
        while parent_pid is None or os.getppid() == parent_pid:
            if not select.select([listener], [], [], 1.0)[0]:
                continue
            conn, _ = listener.accept()
            if os.fork() == 0:
                try:
                    _keep(conn, listener)
                finally:
                    os._exit(0)  # pylint: disable=protected-access
            conn.close()
    finally:
        if os.getpid() == own_pid:
            listener.close()
            os.unlink(path)


def spawn(path, log, timeout_s=120.0):
    """Starts a forkserver at `path` that ends with this process, its output in the file
    object `log`; returns its Popen once it listens.

    Raises:
      RuntimeError: it ended, or did not listen within timeout_s (naming its log's end).
    """
    proc = subprocess.Popen([sys.executable, '-m', 'tfhp.launcher.forkserver', '--socket=%s'
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
        time.sleep(_POLL_S)
    return proc


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m tfhp.launcher.forkserver',
        description='Start job tasks as forks of one process that has imported TensorFlow; '
        'name it to launchers with %s=PATH.' % ENVIRONMENT_VARIABLE)
    parser.add_argument('--socket', required=True, help='the unix socket to listen at')
    parser.add_argument('--exit_with_parent', action='store_true',
                        help='end when the process that started this one ends')
    args = parser.parse_args(argv)
    from tfhp import startup  # pylint: disable=g-import-not-at-top
    startup.prepare_process()
    serve(args.socket, os.getppid() if args.exit_with_parent else None)


if __name__ == '__main__':
    main()

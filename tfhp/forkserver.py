"""`python -m tfhp.forkserver --socket=PATH`: forks job tasks from one process that has imported
TensorFlow and tfhp once (the launcher's side and the protocol: `tfhp.launcher.forked_task`).

It imports what every task imports, listens at PATH, and forks a keeper per connection; the
keeper forks the task, which becomes `python -m tfhp ARGS` in the request's session, network
namespace (setns), directory and environment, and runs it. glibc reads its malloc settings
(`tfhp.launcher.plan.LEAN_MALLOC`) when a process starts; a fork applies the request's with
mallopt. numpy's global generator is reseeded, since every fork would repeat the server's.
"""
import argparse
import ctypes
import json
import os
import runpy
import select
import signal
import socket
import sys
import threading
import traceback

from tfhp import startup
from tfhp.launcher import forked_task

# glibc reads these at start; a fork sets them with mallopt (its parameter numbers).
_MALLOPT = {'MALLOC_ARENA_MAX': -8, 'MALLOC_MMAP_THRESHOLD_': -3, 'MALLOC_TRIM_THRESHOLD_': -1}
_CLONE_NEWNET = 0x40000000


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
    own = forked_task.startup_values(os.environ)
    differing = [n for n, v in forked_task.startup_values(request['env']).items() if v != own[n]]
    if not fds or differing:
        why = ('its %s differs from the forkserver\'s' % ', '.join(differing) if differing
               else 'no output file descriptor came')
        forked_task.send(conn, {'refused': why})
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
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)  # pylint: disable=protected-access
    os.close(fds[0])
    forked_task.send(conn, {'pid': pid})
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            forked_task.send(conn, {'status': os.waitstatus_to_exitcode(status)})
            return
        if select.select([conn], [], [], forked_task.POLL_S)[0] and not conn.recv(1):
            os.kill(pid, signal.SIGKILL)  # its launcher is gone
            os.waitpid(pid, 0)
            return


def _warm_up():
    """Imports what every task imports, so that a fork starts with it."""
    from tfhp import cli  # pylint: disable=g-import-not-at-top,unused-import
    from tfhp import compat  # pylint: disable=g-import-not-at-top,unused-import
    from tfhp.runner import benchmark  # pylint: disable=g-import-not-at-top,unused-import
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


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m tfhp.forkserver',
        description='Start job tasks as forks of one process that has imported TensorFlow; '
        'name it to launchers with %s=PATH.' % forked_task.ENVIRONMENT_VARIABLE)
    parser.add_argument('--socket', required=True, help='the unix socket to listen at')
    parser.add_argument('--exit_with_parent', action='store_true',
                        help='end when the process that started this one ends')
    args = parser.parse_args(argv)
    startup.prepare_process()
    serve(args.socket, os.getppid() if args.exit_with_parent else None)


if __name__ == '__main__':
    main()


"""What a job on one machine is made of: its tasks, their free loopback ports, their command
lines and the bounds they run with. Imports no TensorFlow."""
import os
import socket
import sys

from tfhp import config as config_lib

# Slack on the tasks' own bounds for starting and ending a process (importing TensorFlow).
MARGIN_S = 10.0
# Flags the launcher sets for every task; a job's tfhp flags must not set them.
OWN_FLAGS = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts', 'controller_host',
              'result_file')


def free_ports(count):
    """`count` distinct TCP ports free on 127.0.0.1 (bound together, then released)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(('127.0.0.1', 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def task_names(num_ps, num_workers, controller=False):
    """(job, index) of every task of a job, ps tasks first."""
    return ([('ps', i) for i in range(num_ps)] + [('worker', i) for i in range(num_workers)] +
            ([('controller', 0)] if controller else []))


def task_commands(num_ps, num_workers, tfhp_args, result_dir, controller=False, hosts=None):
    """{(job, index): argv} of every task of a job, on free loopback ports by default.

    Args:
      num_ps, num_workers: task counts.
      tfhp_args: tfhp flags every task gets (the benchmark's configuration).
      result_dir: each worker (and the controller) writes its result to <job>_<index>.jsonl here.
      controller: also start a controller task (the in-graph client).
      hosts: {job: [host:port, ...]} to use instead (an emulated network's addresses).
    Returns:
      An ordered dict-like {(job, index): argv list}; ps tasks first.
    Raises:
      ValueError: tfhp_args sets a flag the launcher sets.
    """
    for arg in tfhp_args:
        name = arg.lstrip('-').split('=', 1)[0]
        if arg.startswith('-') and name in OWN_FLAGS:
            raise ValueError('--%s is set by the launcher for each task; drop it '
                             '(use the launcher\'s --result_file for the job\'s result)' % name)
    tasks = task_names(num_ps, num_workers, controller)
    if hosts is None:
        ports = iter(free_ports(len(tasks)))
        hosts = {}
        for job, _ in tasks:
            hosts.setdefault(job, []).append('127.0.0.1:%d' % next(ports))
    common = ['--worker_hosts=' + ','.join(hosts['worker'])]
    if num_ps:
        common.append('--ps_hosts=' + ','.join(hosts['ps']))
    if controller:
        common.append('--controller_host=' + hosts['controller'][0])
    commands = {}
    for job, index in tasks:
        argv = [sys.executable, '-m', 'tfhp'] + list(tfhp_args) + common + [
            '--job_name=' + job, '--task_index=%d' % index]
        if job != 'ps':
            argv.append('--result_file=' + os.path.join(result_dir, '%s_%d.jsonl' % (job, index)))
        commands[(job, index)] = argv
    return commands


# glibc's malloc settings for a job's tasks (`task_environment`): two arenas instead of eight
# per core, and buffers of 1 MiB or more mapped and unmapped rather than kept in the heap. A
# worker of emulated resnet50 (102 MB of variables) held 820 MB (PSS) with glibc's defaults,
# 570 MB with two arenas, 535 MB with both; its ps 1450, 1220 and 864 MB. Cluster images/sec
# of 4 workers: 117, 127 and 113 (one run each, 2-core EPYC VM: mapping costs page faults).
# What lets 32 workers and 4 ps fit in 24 GB; --default_malloc turns it off.
LEAN_MALLOC = {'MALLOC_ARENA_MAX': '2', 'MALLOC_MMAP_THRESHOLD_': str(1 << 20),
               'MALLOC_TRIM_THRESHOLD_': str(1 << 20)}


def task_environment(environ, lean_malloc=True):
    """The environment of a job's tasks: `environ`, output unbuffered, and (lean_malloc) the
    LEAN_MALLOC settings where environ does not set them."""
    env = dict(LEAN_MALLOC) if lean_malloc else {}
    env.update(environ)
    env['PYTHONUNBUFFERED'] = '1'
    return env


def flag_value(tfhp_args, name, default=None):
    """The value tfhp_args give --name (the last one, as `--name=v` or `--name v`), or
    default."""
    value = default
    for i, arg in enumerate(tfhp_args):
        flag, equals, text = arg.partition('=')
        if flag == '--' + name:
            value = text if equals else (tfhp_args[i + 1] if i + 1 < len(tfhp_args) else '')
    return value


def task_bounds(tfhp_args):
    """(peer_timeout_s, step_timeout_s) the tasks of a job run with: their flags or defaults.

    The launcher's own waits for its tasks derive from them, so it never blames a task for
    keeping the bounds it was given.
    """
    defaults = config_lib.ClusterConfig()
    bounds = []
    for name in ('peer_timeout_s', 'step_timeout_s'):
        try:
            bounds.append(float(flag_value(tfhp_args, name, getattr(defaults, name))))
        except ValueError:  # tfhp itself refuses it, naming the flag
            bounds.append(getattr(defaults, name))
    return tuple(bounds)


def linger_s(tfhp_args):
    """The --linger_s the job's serving tasks get (0 when unset or not a number, which tfhp
    itself refuses, naming the flag): they outlive the workers by up to that much."""
    try:
        return max(0.0, float(flag_value(tfhp_args, 'linger_s', 0.0)))
    except ValueError:
        return 0.0

"""A task started by Slurm's `srun`, its job, index and peers read from Slurm's environment.

srun starts every task of a step with SLURM_PROCID (its rank), the step's task count, node list
and tasks per node. With the default block distribution the ranks fill the nodes in order:
node 0 holds ranks 0..c0-1, node 1 the next c1, and so on. A task's address is its node's host
name and `port_base` + its local rank on that node, so the tasks of one node never share a port
(TensorFlow's Slurm cluster resolver assigns them the same way). The first `num_ps` ranks are
ps tasks, the rest workers in rank order: rank `num_ps` is worker 0, tfhp's chief.

A node list with ranges (`node[01-03],gpu7`) is expanded by `scontrol show hostnames`, as Slurm
itself spells it out; a plain comma-separated list is taken as it is. Pure Python apart from
that one command: the command line resolves the cluster before TensorFlow is imported. This
module reads only the mapping it is given, never os.environ.
"""
import re
import subprocess

from tfhp.config import errors

# Seconds scontrol may take: it asks slurmctld, which a busy controller answers late, but a
# task that cannot learn its peers must fail, not hang.
SCONTROL_TIMEOUT_S = 30.0
# The step's own variables first: a step may run fewer tasks, on fewer nodes, than its job.
_NUM_TASKS = ('SLURM_STEP_NUM_TASKS', 'SLURM_NTASKS')
_NODE_LIST = ('SLURM_STEP_NODELIST', 'SLURM_JOB_NODELIST')
_TASKS_PER_NODE = ('SLURM_STEP_TASKS_PER_NODE', 'SLURM_TASKS_PER_NODE')
_COUNT = re.compile(r'(\d+)(?:\(x(\d+)\))?$')


def _error(message, *args):
    return errors.ConfigError('Slurm: ' + message % args)


def _variable(environ, names):
    """(name, value) of the first of `names` set in `environ`; refuses when none is."""
    for name in names:
        if environ.get(name):
            return name, environ[name]
    raise _error('%s is not set; is this task started by srun?', ' or '.join(names))


def _integer(name, value):
    try:
        return int(value)
    except ValueError:
        raise _error('%s=%r is not a number', name, value) from None


def num_tasks(environ):
    """The tasks of this Slurm step, or 0 outside one.

    Args:
      environ: the process environment (a mapping).
    Returns:
      SLURM_STEP_NUM_TASKS (else SLURM_NTASKS) as an int; 0 when neither is set.
    Raises:
      tfhp.config.ConfigError: the variable is not a number.
    """
    for name in _NUM_TASKS:
        if environ.get(name):
            return _integer(name, environ[name])
    return 0


def tasks_per_node(text, name=_TASKS_PER_NODE[0]):
    """Expands Slurm's compressed tasks-per-node list: '2(x3),1' -> [2, 2, 2, 1].

    Args:
      text: the variable's value: comma-separated counts, each optionally `(xR)`, R nodes.
      name: the variable it came from, for the error.
    Returns:
      The task count of every node, in node-list order.
    Raises:
      tfhp.config.ConfigError: an item is not `N` or `N(xR)`.
    """
    counts = []
    for item in text.split(','):
        match = _COUNT.match(item.strip())
        if not match:
            raise _error('%s=%r: %r is not N or N(xR)', name, text, item)
        counts += [int(match.group(1))] * int(match.group(2) or 1)
    return counts


def hostnames(node_list, name=_NODE_LIST[0]):
    """The host names of a Slurm node list, in order.

    Args:
      node_list: e.g. 'node[01-03,07],gpu1'.
      name: the variable it came from, for errors.
    Returns:
      ['node01', 'node02', 'node03', 'node07', 'gpu1']: a list with a range is expanded by
      `scontrol show hostnames` (found on PATH, bounded by SCONTROL_TIMEOUT_S); a plain list is
      split at its commas.
    Raises:
      tfhp.config.ConfigError: scontrol is missing, fails, times out or prints nothing.
    """
    if '[' not in node_list:
        return [host.strip() for host in node_list.split(',') if host.strip()]
    command = ['scontrol', 'show', 'hostnames', node_list]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              timeout=SCONTROL_TIMEOUT_S)
    except FileNotFoundError:
        raise _error('%s=%r needs `scontrol show hostnames` to expand it; scontrol is not '
                     'on PATH', name, node_list) from None
    except subprocess.TimeoutExpired:
        raise _error('`%s` did not answer within %g s', ' '.join(command),
                     SCONTROL_TIMEOUT_S) from None
    hosts = done.stdout.split()
    if done.returncode or not hosts:
        why = (done.stderr.strip().splitlines() or ['no output'])[-1]
        raise _error('`%s` failed (exit %d): %s', ' '.join(command), done.returncode, why)
    return hosts


def cluster_fields(environ, num_ps, port_base):
    """Reads this task's cluster from Slurm's environment into ClusterConfig keyword arguments.

    Args:
      environ: the process environment (a mapping): SLURM_PROCID, SLURM_STEP_NUM_TASKS (or
        SLURM_NTASKS), SLURM_STEP_NODELIST (or SLURM_JOB_NODELIST), SLURM_STEP_TASKS_PER_NODE
        (or SLURM_TASKS_PER_NODE), and SLURM_LOCALID if set, to check the distribution.
      num_ps: how many of the first ranks are ps tasks (--slurm_num_ps).
      port_base: the port of local rank 0 on every node (--slurm_port_base).
    Returns:
      A dict with job_name, task_index, ps_hosts, worker_hosts and controller_host, as
      tfhp.config.tf_config.cluster_fields returns.
    Raises:
      tfhp.config.ConfigError: a variable missing or malformed, variables that disagree with
        each other, or a --slurm_num_ps that leaves no worker; the message names them.
    """
    rank = _integer(*_variable(environ, ('SLURM_PROCID',)))
    tasks_name, tasks_value = _variable(environ, _NUM_TASKS)
    count = _integer(tasks_name, tasks_value)
    list_name, node_list = _variable(environ, _NODE_LIST)
    hosts = hostnames(node_list, list_name)
    per_node_name, per_node_value = _variable(environ, _TASKS_PER_NODE)
    per_node = tasks_per_node(per_node_value, per_node_name)
    if len(per_node) != len(hosts):
        raise _error('%s=%r gives %d node(s) but %s=%r names %d', per_node_name,
                     per_node_value, len(per_node), list_name, node_list, len(hosts))
    if sum(per_node) != count:
        raise _error('%s=%r adds up to %d task(s) but %s=%d', per_node_name, per_node_value,
                     sum(per_node), tasks_name, count)
    if not 0 <= rank < count:
        raise _error('SLURM_PROCID=%d is outside the %d task(s) of %s', rank, count, tasks_name)
    if not 0 <= num_ps < count:
        raise _error('--slurm_num_ps=%d must be 0 to %d: a worker among the %s=%d task(s)',
                     num_ps, count - 1, tasks_name, count)
    if not 1 <= port_base <= 65536 - max(per_node):
        raise _error('--slurm_port_base=%d: ports %d-%d (%d task(s) on a node) must lie in '
                     '1-65535', port_base, port_base, port_base + max(per_node) - 1,
                     max(per_node))
    # Rank order is block order: every rank of node 0, then node 1, ...
    placed = [(host, local) for host, n in zip(hosts, per_node) for local in range(n)]
    local_id = environ.get('SLURM_LOCALID')
    if local_id and _integer('SLURM_LOCALID', local_id) != placed[rank][1]:
        raise _error('SLURM_LOCALID=%s, but rank %d is local task %d of %s when tasks are '
                     'placed in blocks; start them with srun --distribution=block', local_id,
                     rank, placed[rank][1], placed[rank][0])
    addresses = ['%s:%d' % (host, port_base + local) for host, local in placed]
    job_name, index = ('ps', rank) if rank < num_ps else ('worker', rank - num_ps)
    return {'job_name': job_name, 'task_index': index,
            'ps_hosts': tuple(addresses[:num_ps]), 'worker_hosts': tuple(addresses[num_ps:]),
            'controller_host': ''}

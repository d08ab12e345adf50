"""The TF_CONFIG environment variable that cluster managers set, read into cluster fields.

TF_CONFIG is JSON: {"cluster": {"chief": [...], "worker": [...], "ps": [...]}, "task": {"type":
"worker", "index": 1}}. tfhp has no separate chief job (its chief is worker 0), so a "chief" task
becomes worker 0 and the "worker" tasks follow it. Pure Python: the command line checks it before
TensorFlow is imported.
"""
import json

from tfhp import config as config_lib

_JOBS = ('chief', 'worker', 'ps', 'controller')


def _fail(message, *args):
    raise config_lib.ConfigError('TF_CONFIG: ' + message % args)


def _host_list(cluster, job):
    hosts = cluster.get(job, [])
    if not isinstance(hosts, list) or not all(isinstance(h, str) for h in hosts):
        _fail('cluster.%s must be a list of "host:port" strings, got %r', job, hosts)
    return hosts


def cluster_fields(text):
    """Parses TF_CONFIG into ClusterConfig keyword arguments.

    Args:
      text: the variable's value.
    Returns:
      A dict with job_name, task_index, ps_hosts, worker_hosts and controller_host.
    Raises:
      tfhp.config.ConfigError: malformed JSON, an unknown job, or a task outside the cluster.
    """
    try:
        spec = json.loads(text)
    except ValueError as e:
        _fail('not valid JSON (%s)', e)
    if not isinstance(spec, dict) or not isinstance(spec.get('cluster'), dict):
        _fail('needs a "cluster" object')
    cluster, task = spec['cluster'], spec.get('task', {})
    unknown = sorted(set(cluster) - set(_JOBS))
    if unknown:
        _fail('unsupported job(s) %s; tfhp runs %s', unknown, list(_JOBS))
    chief, workers = _host_list(cluster, 'chief'), _host_list(cluster, 'worker')
    if len(chief) > 1:
        _fail('at most one chief, got %d', len(chief))
    controller = _host_list(cluster, 'controller')
    if len(controller) > 1:
        _fail('at most one controller, got %d', len(controller))
    task_type, index = task.get('type'), task.get('index', 0)
    if task_type not in _JOBS or not isinstance(index, int):
        _fail('task must be {"type": one of %s, "index": int}, got %r', list(_JOBS), task)
    hosts = _host_list(cluster, task_type)
    if not 0 <= index < len(hosts):
        _fail('task index %d is outside job %r, which lists %d task(s) in cluster.%s', index,
              task_type, len(hosts), task_type)
    if task_type == 'chief':
        job_name = 'worker'
    elif task_type == 'worker':
        job_name, index = 'worker', index + len(chief)
    else:
        job_name = task_type
    return {'job_name': job_name, 'task_index': index,
            'ps_hosts': tuple(_host_list(cluster, 'ps')),
            'worker_hosts': tuple(chief + workers),
            'controller_host': controller[0] if controller else ''}

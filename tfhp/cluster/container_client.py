"""A worker that is a client of its own: one model on shared ps tasks, in a resource container.

Many such clients (`tfhp.search`'s points) train at once on one set of ps tasks
(--serve_clients). Each builds its whole graph in its own resource container (--container), so
the variables, queues and staging areas it makes on the ps tasks live apart from every other
client's, even under the same names. It is its own chief: it initialises its variables, trains
and evaluates as one process does (`tfhp.runner.benchmark.run`: towers and input on this worker,
variables on the ps tasks), and resets its container as it ends (`tf.Session.reset`), so the
servers free its variables and their memory stays flat over many clients
(--container_reset=false leaves them there, to show what the reset saves).

Why a server of its own: `Session.reset` closes every session of the master it is sent to, and
a ps task's master holds the task's own sessions (its serving loop, its published state).
Through this worker's own master the reset closes this client's sessions only.
"""
import dataclasses

import tensorflow.compat.v1 as tf

from tfhp.runner import benchmark
from tfhp import modes
from tfhp import timing
from tfhp import topology as topology_lib
from tfhp.cluster import servers
from tfhp.cluster import task as task_lib


def topology(cluster, device='cpu', num_towers=1):
    """The client's topology: towers and input on its own worker, variables on the ps tasks; one
    graph that initialises itself (in-graph, with this worker the only one).

    Args:
      cluster: the `tfhp.config.ClusterConfig` of the client (a worker with --container).
      device: 'cpu' or 'gpu'.
      num_towers: towers on this worker.
    """
    worker = '/job:worker/task:%d' % cluster.task_index
    return topology_lib.Topology(
        tower_devices=tuple('%s/%s:%d' % (worker, device, i) for i in range(num_towers)),
        variable_devices=tuple('/job:ps/task:%d/cpu:0' % i for i in range(len(cluster.ps_hosts)))
        or (worker + '/cpu:0',),
        input_device=worker + '/cpu:0', is_chief=True, graph_mode=modes.IN_GRAPH,
        job_name='worker', task_index=cluster.task_index, num_workers=1,
        cluster=tuple(sorted((job, tuple(hosts)) for job, hosts in cluster.jobs().items())))


def device_filters(cluster):
    """The tasks a client's sessions talk to: the ps tasks and itself (the other clients' slots
    may not be running)."""
    return ['/job:ps', '/job:worker/task:%d' % cluster.task_index]


def reset(target, cluster, containers):
    """Clears `containers` on every ps task and on this client (`tf.Session.reset` through this
    task's master, which also closes this task's sessions)."""
    config = tf.ConfigProto(device_filters=device_filters(cluster))
    tf.Session.reset(target, list(containers), config=config)


def run(cfg, log, stop, fail):
    """Trains and evaluates cfg's model in its container on the ps tasks; returns the result
    dict (appended to --result_file), with 'container' added."""
    del stop  # a stop signal ends the process; its container is left for the driver to reset
    cluster = cfg.cluster
    ps = [('ps', i) for i in range(len(cluster.ps_hosts))]
    task = task_lib.start(cfg, task_lib.server_proto(cfg), None, ps, fail, watched=ps)
    servers.wait_for_peers(task.watch, servers.peers(cluster, ps), cluster.peer_timeout_s)
    log('worker %d: a client in container %r on %d ps task(s)'
        % (cluster.task_index, cluster.container, len(ps)))
    # The result is written after the reset, so a reader of it knows the container is gone.
    local = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, result_file=None))
    try:
        result = benchmark.run(local, log, topology=topology(
            cluster, cfg.device.device, cfg.device.num_devices), target=task.server.target,
                               container=cluster.container,
                               device_filters=device_filters(cluster))
    except Exception:
        task.dog.await_failure()
        raise
    finally:
        if cluster.container_reset:
            task.dog.phase('resetting container %r' % cluster.container, cluster.peer_timeout_s)
            reset(task.server.target, cluster, [cluster.container])
        else:
            log('worker %d: leaving container %r on the ps tasks (--container_reset=false)'
                % (cluster.task_index, cluster.container))
    result['container'] = cluster.container
    if cfg.run.result_file:
        timing.append_json(cfg.run.result_file, result)
    return result

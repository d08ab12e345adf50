"""One task of a multi-process job: what every role shares, and which role this task plays.

Roles (`ClusterConfig.job_name`, `graph_mode`):
  ps tasks, and in-graph workers other than the client, only serve (`tfhp.cluster.serving_task`):
    they hold variables (or run towers) for others and exit once every task they serve has
    signalled done, failed or was lost, so a job leaves no process behind.
  between-graph workers each build their own graph and train (`tfhp.cluster.worker`).
  the in-graph client (the controller, or worker 0) builds one graph with towers on every
    worker and runs the one-process runner through its server (`tfhp.cluster.client`).

Every task publishes its state and watches its peers' (`tfhp.cluster.liveness`); a watchdog
(`tfhp.cluster.watchdog`) bounds every phase of its work and ends it, with one line naming the
peer, when an essential peer is lost, or (exit 2) when a peer was started with settings that
disagree with its own (`tfhp.cluster.agreement`). Exit statuses: 0 done, 1 a peer was lost or a
wait overran, 2 a setting is at fault, 128 + N stopped by signal N. docs/faults.md has the rest.
"""
import collections
import time

import tensorflow.compat.v1 as tf

from tfhp import pipelines
from tfhp import session as session_lib
from tfhp.cluster import control
from tfhp.cluster import errors
from tfhp.cluster import liveness
from tfhp.cluster import servers
from tfhp.cluster import task_session
from tfhp.cluster import watchdog

Task = collections.namedtuple('Task', [
    'server',  # the started tf.train.Server
    'me',      # this task's liveness.Peer
    'watch',   # the liveness.PeerWatch of every other task
    'dog',     # its watchdog.Watchdog
    'state',   # its published liveness.TaskState
])


def client(cluster):
    """(job, index) of the in-graph client."""
    return ('controller', 0) if cluster.controller_host else ('worker', 0)


def sender_id(cluster, job_name, task_index):
    """Id a task signals done with: its worker index, or num_workers for the controller."""
    return cluster.num_workers if job_name == 'controller' else task_index


def serving_tasks(cluster):
    """(job, index) of every task that only serves, for this job's graph mode."""
    tasks = [('ps', i) for i in range(len(cluster.ps_hosts))]
    if cluster.mode.one_graph:
        client_task = client(cluster)
        tasks += [('worker', w) for w in range(cluster.num_workers) if ('worker', w) != client_task]
    return tasks


def control_task(cluster):
    """(job, index) of the task holding the job's control values (`tfhp.cluster.control`): ps
    task 0, or, without ps tasks (all-reduce), each worker itself."""
    return ('ps', 0) if cluster.ps_hosts else (cluster.job_name, cluster.task_index)


def server_proto(cfg, group_leader=''):
    """The ConfigProto of this task's server: its virtual CPU devices (a worker's towers), its
    thread pools, and the collective group leader of an all-reduce job ('' none)."""
    num_devices = cfg.device.num_devices if (
        cfg.cluster.job_name == 'worker' and cfg.device.device == 'cpu') else 1
    proto = session_lib.config_proto(num_cpu_devices=num_devices,
                                     num_intra_threads=cfg.device.num_intra_threads,
                                     num_inter_threads=session_lib.inter_op_threads(
                                         cfg.device.num_inter_threads,
                                         pipelines.preprocesses_in_graph(cfg.data)))
    if group_leader:
        proto.experimental.collective_group_leader = group_leader
    return proto


def bytes_by_device(variables):
    """{device: bytes of the variables placed there}: each ps task's share of the traffic."""
    loads = {}
    for v in variables:
        device = tf.DeviceSpec.from_string(v.device).to_string()
        loads[device] = loads.get(device, 0) + v.shape.num_elements() * v.dtype.size
    return loads


def checkpoint_step(train_dir):
    """Global step of the latest checkpoint in train_dir, 0 without one."""
    path = tf.train.latest_checkpoint(train_dir) if train_dir else None
    return int(path.rsplit('-', 1)[1]) if path else 0


def start(cfg, proto, settings, essential, fail, watched=None, on_event=None):
    """Starts this task's server, publishes its state and starts watching its peers.

    Args:
      cfg: the BenchmarkConfig.
      proto: the server's ConfigProto (`server_proto`).
      settings: what this task publishes for agreement (None: it builds no model).
      essential: (job, index) of the peers whose loss ends this task.
      watched: (job, index) of the peers to watch (published state, agreement, progress);
        None: every other task. Each watched peer costs a thread and a read of it every
        interval, so a worker that watched every other task made a job's reads grow with the
        square of its tasks: 36 tasks on 2 cores never finished starting.
      fail: ends the task (`watchdog.exit_process` from the command line).
      on_event: told of the watched peers' events (`liveness.PeerWatch`), e.g. an
        `events.EventLog`'s note.
    Returns:
      A `Task`.
    """
    cluster = cfg.cluster
    server = servers.start_server(cluster, proto)
    job, index = cluster.job_name, cluster.task_index
    me = liveness.Peer(job, index, cluster.hosts(job)[index])
    if (job, index) == control_task(cluster):
        control.publish(server.target, liveness.cpu_device(job, index))
    state = liveness.TaskState(server.target, job, index, liveness.describe(
        job, index, me.address, cluster.jobs(), settings))
    if watched is None:
        watched = [(j, i) for j, hosts in cluster.jobs().items() for i in range(len(hosts))
                   if (j, i) != (job, index)]
    others = servers.peers(cluster, sorted(set(watched) | set(essential)))
    watch = liveness.PeerWatch(server.target, others, on_event=on_event)
    dog = watchdog.Watchdog(str(me), fail, watch, servers.peers(cluster, essential),
                            silent_s=cluster.peer_timeout_s,
                            still_s=cluster.step_timeout_s + cluster.peer_timeout_s,
                            # The model-building tasks check agreement; a serving task that
                            # refused a job first would end it for the workers as a lost peer
                            # before they could name the disagreement themselves.
                            mine=state.info if settings is not None else None)
    return Task(server, me, watch, dog, state)


def open_session(task, built, cluster, train_dir, config, hooks, is_chief, initialise, events):
    """This worker's `task_session.TaskSession` on `built`'s graph, once it is ready.

    The chief initialises the variables or restores the latest checkpoint of train_dir (an
    event says which); the other workers wait for it, bounded by --peer_timeout_s, under a
    watchdog phase that names the chief.

    Args:
      task: this task (`start`).
      built: its `build.Built`.
      cluster: the ClusterConfig.
      train_dir: --train_dir ('' or None: none).
      config: the session's ConfigProto (`task_session.session_config`).
      hooks: its SessionRunHooks.
      is_chief: worker 0, which restores and writes checkpoints.
      initialise: whether this task initialises (the chief, or every worker of an all-reduce
        job).
      events: its `events.EventLog`.
    Returns:
      (the session, when it was asked for, when it was ready): epoch seconds.
    Raises:
      errors.ClusterError: the chief did not initialise the model within --peer_timeout_s.
    """
    chief = 'chief worker 0 at %s' % cluster.worker_hosts[0]
    task.dog.phase('starting the session (initialising, restoring or waiting for %s)' % chief,
                   2 * cluster.peer_timeout_s)
    start = time.time()
    restored = checkpoint_step(train_dir) if is_chief else 0
    with built.graph.as_default():
        try:
            sess = task_session.TaskSession(
                task.server.target, config, built.saver, initialise=initialise,
                checkpoint_dir=train_dir if is_chief else None, hooks=hooks,
                timeout_s=cluster.peer_timeout_s)
        except task_session.NotInitialised:
            raise errors.ClusterError('%s did not initialise the model within %g s'
                                      % (chief, cluster.peer_timeout_s)) from None
    ready = time.time()
    if restored:
        events.note('restored the checkpoint of global step %d from %s' % (restored, train_dir))
    return sess, start, ready


def stop_bound(cluster):
    """Bound on a stop: one step (possibly waiting for peers), then closing and signalling."""
    return cluster.step_timeout_s + 2 * cluster.peer_timeout_s



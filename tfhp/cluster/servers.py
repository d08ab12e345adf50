"""One task's `tf.train.Server`, bounded waits for its peers, and the ps-exit protocol.

Every wait here has a bound and its error names the task and address waited for, because the
stock runtime waits for a missing peer forever ("CreateSession still waiting for response from
worker") without saying which flag is wrong.
"""
import socket
import time

import tensorflow.compat.v1 as tf

from tfhp import config as config_lib
from tfhp.ops import barriers

# How often a wait re-checks; short, so a task starts within a fraction of a second of its peer.
POLL_S = 0.05


class ClusterError(config_lib.ConfigError):
    """A peer that never answers, or a server that cannot start; names task and address."""


def device(job_name, task_index, kind='cpu', index=0):
    """A fully specified device string, e.g. '/job:ps/task:0/cpu:0'."""
    return '/job:%s/task:%d/%s:%d' % (job_name, task_index, kind, index)


def start_server(cluster_config, proto):
    """Starts this task's gRPC server.

    Args:
      cluster_config: a `tfhp.config.ClusterConfig`.
      proto: ConfigProto of the server (its device_count makes virtual CPU devices).
    Returns:
      A started `tf.train.Server`.
    Raises:
      ClusterError: the server cannot listen on its address.
    """
    cfg = cluster_config
    address = cfg.hosts(cfg.job_name)[cfg.task_index]
    try:
        return tf.train.Server(tf.train.ClusterSpec(cfg.jobs()), job_name=cfg.job_name,
                               task_index=cfg.task_index, config=proto, start=True)
    except tf.errors.OpError as e:
        raise ClusterError('%s task %d cannot listen on %s: %s'
                           % (cfg.job_name, cfg.task_index, address, e.message)) from None


def answers(address, timeout_s=0.5):
    """Whether something accepts TCP connections at host:port."""
    host, port = address.rsplit(':', 1)
    try:
        with socket.create_connection((host.strip('[]'), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


def wait_for_tasks(cluster_config, tasks, timeout_s):
    """Waits until every (job, index) in `tasks` answers, at most `timeout_s` in all.

    Raises:
      ClusterError: naming the first task that did not answer, its address and flag.
    """
    deadline = time.monotonic() + timeout_s
    for job, index in tasks:
        address = cluster_config.hosts(job)[index]
        while not answers(address):
            if time.monotonic() > deadline:
                raise ClusterError('%s task %d at %s did not answer within %g s (check --%s_hosts '
                                   'and that the task is running)'
                                   % (job, index, address, timeout_s, job))
            time.sleep(POLL_S)


def signal_done(target, cluster_config, tasks, sender):
    """Tells each (job, index) in `tasks` that `sender` is done (the ps-exit protocol).

    Args:
      target: a session target of this task (its server's).
      cluster_config: a `tfhp.config.ClusterConfig`.
      tasks: (job, index) of the serving tasks.
      sender: this task's sender id (its worker index, or num_workers for the controller).
    """
    if not tasks:
        return
    graph = tf.Graph()
    with graph.as_default():
        signal = barriers.signal_done([device(job, index) for job, index in tasks], sender)
    proto = tf.ConfigProto(device_filters=['/job:%s/task:%d' % task for task in tasks])
    with tf.Session(target, graph=graph, config=proto) as sess:
        sess.run(signal, options=tf.RunOptions(
            timeout_in_ms=int(cluster_config.peer_timeout_s * 1000)))


def serve_until_done(server, cluster_config, senders, log):
    """Serves until every sender signalled done or stopped answering: the ps-exit protocol.

    A sender that stops answering for `peer_timeout_s` (it died and was not restarted) is given
    up on, so a serving task ends by itself even when a worker dies.

    Args:
      server: this task's started server.
      cluster_config: a `tfhp.config.ClusterConfig`.
      senders: {sender id: address} of the tasks expected to signal done.
      log: called with each line to print.
    Returns:
      The sorted ids of the senders that stopped answering without signalling (empty on a
      clean end).
    """
    cfg = cluster_config
    graph = tf.Graph()
    with graph.as_default():
        dequeue = barriers.done_queue(device(cfg.job_name, cfg.task_index)).dequeue()
    proto = tf.ConfigProto(device_filters=['/job:%s/task:%d' % (cfg.job_name, cfg.task_index)])
    options = tf.RunOptions(timeout_in_ms=1000)
    pending = dict(senders)
    last_answer = {sender: time.monotonic() for sender in pending}
    gone = []
    with tf.Session(server.target, graph=graph, config=proto) as sess:
        while pending:
            try:
                pending.pop(int(sess.run(dequeue, options=options)), None)
                continue
            except tf.errors.DeadlineExceededError:
                pass
            now = time.monotonic()
            for sender, address in sorted(pending.items()):
                if answers(address):
                    last_answer[sender] = now
                elif now - last_answer[sender] > cfg.peer_timeout_s:
                    log('%s stopped answering without signalling done; not waiting for it'
                        % address)
                    del pending[sender]
                    gone.append(sender)
    # The senders close their sessions after signalling, which calls into this task; let them
    # finish (they exit right after) rather than reset their connections, for at most a second.
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline and any(answers(a, 0.1) for a in senders.values()):
        time.sleep(POLL_S)
    return sorted(gone)

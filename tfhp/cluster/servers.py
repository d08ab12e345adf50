"""One task's `tf.train.Server`, bounded waits for its peers, and the ps-exit protocol.

Every wait here has a bound and its error names the task and address waited for, because the
stock runtime waits for a missing peer forever ("CreateSession still waiting for response from
worker") without saying which flag is wrong. Whether a peer is there comes from what it
published (`tfhp.cluster.liveness`), not from its port.
"""
import socket
import time

import tensorflow.compat.v1 as tf

from tfhp.cluster import errors
from tfhp.cluster import liveness
from tfhp.ops import barriers

# How often a wait re-checks; short, so a task starts within a fraction of a second of its peer.
POLL_S = 0.05


def device(job_name, task_index, kind='cpu', index=0):
    """A fully specified device string, e.g. '/job:ps/task:0/cpu:0'."""
    return '/job:%s/task:%d/%s:%d' % (job_name, task_index, kind, index)


def peers(cluster_config, tasks):
    """`liveness.Peer`s of the (job, index) pairs in `tasks`."""
    return [liveness.Peer(job, index, cluster_config.hosts(job)[index]) for job, index in tasks]


def start_server(cluster_config, proto):
    """Starts this task's gRPC server.

    Args:
      cluster_config: a `tfhp.config.ClusterConfig`.
      proto: ConfigProto of the server (its device_count makes virtual CPU devices).
    Returns:
      A started `tf.train.Server`.
    Raises:
      errors.ClusterError: the server cannot listen on its address.
    """
    cfg = cluster_config
    address = cfg.hosts(cfg.job_name)[cfg.task_index]
    port = int(address.rsplit(':', 1)[1])
    # gRPC listens with SO_REUSEPORT: a second task started with the same index would share the
    # port (and its connections) silently. A socket without it cannot bind next to a listener;
    # with SO_REUSEADDR, as gRPC's, it can next to the TIME_WAIT connections a restarted task's
    # former self left behind.
    probe = socket.socket(socket.AF_INET6 if ':' in address.rsplit(':', 1)[0] else
                          socket.AF_INET)
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(('', port))
    except OSError as e:
        raise errors.ClusterError(
            '%s task %d cannot listen on %s (%s): is another task started with the same '
            '--task_index (or TF_CONFIG index), or the port taken?'
            % (cfg.job_name, cfg.task_index, address, e.strerror)) from None
    finally:
        probe.close()
    try:
        return tf.train.Server(tf.train.ClusterSpec(cfg.server_jobs()), job_name=cfg.job_name,
                               task_index=cfg.task_index, config=proto, start=True)
    except tf.errors.OpError as e:
        raise errors.ClusterError(
            '%s task %d cannot listen on %s (%s): is the port taken, or another task started '
            'with the same --task_index (or TF_CONFIG index)?'
            % (cfg.job_name, cfg.task_index, address, e.message)) from None


def interfaces():
    """Names of the network interfaces of this process's network namespace."""
    return [name for _, name in socket.if_nameindex()]


def exposure(cluster_config, interface_names, serving):
    """The line a task prints about who can reach its server, or None when no one outside its
    network namespace can: one whose only interface is the loopback (a local job's, that the
    launcher made: `tfhp.launcher.private_net`).

    TensorFlow listens on every interface (its ServerDef has no bind address), with no
    authentication, and runs any op it is sent (docs/security.md).

    Args:
      cluster_config: a `tfhp.config.ClusterConfig`.
      interface_names: the interfaces of this task's network namespace (`interfaces`).
      serving: the task only serves (a ps task): --linger_s keeps it open after its workers.
    """
    cfg = cluster_config
    if set(interface_names) <= {'lo'}:
        return None
    port = cfg.hosts(cfg.job_name)[cfg.task_index].rsplit(':', 1)[1]
    line = ('%s task %d listens on port %s of every interface here (%s), unauthenticated: '
            'whoever reaches it can run any op in this process, as its user (read and write '
            'files); run the job on a trusted network only (docs/security.md)'
            % (cfg.job_name, cfg.task_index, port, ', '.join(interface_names)))
    if cfg.serve_clients:
        line += '. It serves any client for up to %g s (--serve_clients, --linger_s)' % (
            cfg.linger_s)
    elif serving and cfg.linger_s:
        line += '. It stays open up to %g s after the tasks it serves end (--linger_s)' % (
            cfg.linger_s)
    return line


def wait_for_peers(watch, wanted, timeout_s):
    """Waits until every peer in `wanted` has published its state, at most timeout_s in all.

    Raises:
      errors.ClusterError: naming the first peer that did not, its address and flag.
    """
    deadline = time.monotonic() + timeout_s
    for peer in wanted:
        while watch.info(peer) is None:
            if time.monotonic() > deadline:
                error = watch.silence(peer)[2]
                raise errors.ClusterError('%s did not answer within %g s (%s; check --%s_hosts '
                                          'and that the task is running)'
                                          % (peer, timeout_s, error, peer.job))
            time.sleep(POLL_S)


# Sessions `signal_done` leaves open: a serving task exits as soon as it has every token, and
# closing a session whose peer has exited waits for it (30 s, seen on TF 2.21). The process
# ends right after signalling, which ends them.
_LEFT_OPEN = []


# The sender id with which a client releases lingering serving tasks (`release`): out of reach
# of worker indices and the controller's (num_workers).
RELEASE = 2 ** 30

_SIGNAL_ATTEMPTS = 3
_SIGNAL_RETRY_S = 0.5


def signal_done(target, cluster_config, tasks, sender, failed=False):
    """Tells each (job, index) in `tasks` that `sender` is done, or failed (the ps-exit protocol).

    Each task gets its own run, so one that already exited does not fail the others' signal.

    Args:
      target: a session target of this task (its server's).
      cluster_config: a `tfhp.config.ClusterConfig`.
      tasks: (job, index) of the serving tasks.
      sender: this task's sender id (its worker index, or num_workers for the controller).
      failed: this task is ending on a failure (the serving tasks stop waiting for it at once).
    Returns:
      The (job, index) of the tasks that could not be told (they had gone).
    """
    options = tf.RunOptions(timeout_in_ms=int(cluster_config.peer_timeout_s * 1000))
    missed = []
    for job, index in tasks:
        graph = tf.Graph()
        with graph.as_default():
            signal = barriers.signal_done([device(job, index)], sender, failed)
        sess = tf.Session(target, graph=graph,
                          config=tf.ConfigProto(device_filters=['/job:%s/task:%d' % (job, index)]))
        _LEFT_OPEN.append(sess)
        for attempt in range(_SIGNAL_ATTEMPTS):
            try:
                sess.run(signal, options=options)
                break
            except (tf.errors.UnavailableError, tf.errors.AbortedError):
                # A channel that failed once may answer a retry (a duplicate token is
                # harmless); a gone task fails fast every time, so retrying costs little.
                if attempt + 1 == _SIGNAL_ATTEMPTS:
                    missed.append((job, index))
                else:
                    time.sleep(_SIGNAL_RETRY_S)
            except tf.errors.OpError:
                missed.append((job, index))
                break
    return missed


def _token_reader(server, cluster_config):
    """(session, take) on this task's own server: take() -> the done tokens in its queue now,
    as a list (`barriers.take_done_tokens`)."""
    cfg = cluster_config
    graph = tf.Graph()
    with graph.as_default():
        take = barriers.take_done_tokens(device(cfg.job_name, cfg.task_index))
    proto = tf.ConfigProto(device_filters=['/job:%s/task:%d' % (cfg.job_name, cfg.task_index)])
    # The run is local and does not wait; the bound only guards against a broken server.
    options = tf.RunOptions(timeout_in_ms=int(cfg.peer_timeout_s * 1000))
    sess = tf.Session(server.target, graph=graph, config=proto)
    return sess, lambda: sess.run(take, options=options).tolist()


def serve_until_done(server, cluster_config, state, watch, senders, log):
    """Serves until every sender signalled done, signalled a failure or was lost: the ps-exit
    protocol.

    A sender is lost when it did not answer for --peer_timeout_s (it died, or was stopped) or
    answered without progress for --step_timeout_s + --peer_timeout_s (it hung); a lost sender
    that comes back (a restarted task: a new incarnation) is waited for again. So a serving
    task ends by itself, in a bound derived from the timeouts, whatever its workers do.

    Args:
      server: this task's started server.
      cluster_config: a `tfhp.config.ClusterConfig`.
      state: this task's `liveness.TaskState` (advanced every turn: this loop is its progress).
      watch: a `liveness.PeerWatch` of the senders.
      senders: {sender id: `liveness.Peer`} of the tasks expected to signal done.
      log: called with each line to print.
    Returns:
      The sorted `Peer`s that failed or were lost (empty on a clean end).
    """
    cfg = cluster_config
    pending, lost, failed = dict(senders), {}, {}
    sess, take = _token_reader(server, cfg)
    with sess:
        while pending:
            state.advance()
            tokens = take()
            for token in tokens:
                sender = token if token >= 0 else -token - 1
                peer = pending.pop(sender, None) or lost.pop(sender, None)
                lost.pop(sender, None)
                if token < 0 and peer is not None:
                    log('%s failed; not waiting for it' % peer)
                    failed[sender] = peer
            if not tokens:
                time.sleep(POLL_S)
            for sender, peer in sorted(lost.items()):
                if not watch.lost([peer], cfg.peer_timeout_s, cfg.peer_timeout_s):
                    log('%s is back; waiting for it again' % peer)
                    pending[sender] = lost.pop(sender)
            for peer, why in watch.lost(list(pending.values()), cfg.peer_timeout_s,
                                        cfg.step_timeout_s + cfg.peer_timeout_s):
                log('lost %s: %s; not waiting for it' % (peer, why))
                sender = next(s for s, p in pending.items() if p == peer)
                lost[sender] = pending.pop(sender)
    return sorted(list(lost.values()) + list(failed.values()))


def release(target, cluster_config, tasks):
    """Asks the lingering serving tasks (job, index) of `tasks` to end now (--linger_s).

    Returns:
      The (job, index) of the tasks that could not be told (they had gone).
    """
    return signal_done(target, cluster_config, tasks, RELEASE)


def linger(server, cluster_config, state, log, stopped):
    """Serves on for --linger_s seconds, or until a client releases this task (`release`) or
    `stopped()` is true; returns how it ended: 'released', 'stopped' or 'timed out'.

    Every done token taken meanwhile is dropped unless it is the release: a worker's late
    duplicate must not end the wait.
    """
    cfg = cluster_config
    log('/job:%s/task:%d lingering: serving at most %g s more, until a client releases it '
        '(python -m tfhp.reconnect)' % (cfg.job_name, cfg.task_index, cfg.linger_s))
    deadline = time.monotonic() + cfg.linger_s
    sess, take = _token_reader(server, cfg)
    with sess:
        while time.monotonic() < deadline:
            state.advance()
            if RELEASE in take():
                return 'released'
            if stopped():
                return 'stopped'
            time.sleep(POLL_S)
    return 'timed out'

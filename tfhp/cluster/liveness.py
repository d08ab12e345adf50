"""Liveness from progress: every task keeps a counter that its work advances; peers read it.

A TCP connect is no proof of life: the kernel accepts it for a stopped (SIGSTOP) process, and a
hung task keeps its port open. So every task publishes, on its own CPU device, a progress
counter that only its work advances (a worker's train op, a serving task's loop) and a JSON
description of itself (`describe`: who it is, its incarnation, the cluster and settings it was
started with). Its peers read both through their own server, each read bounded:
  a peer *answers* when a read returns (a runtime that has not published yet answers too);
  it *progresses* when its (incarnation, counter) changes, so a restarted task, a new
  incarnation, counts as progress.

A watch does not blame its peers for its own stall. When this task was stopped (SIGSTOP) or
starved of CPU, nobody read the peers meanwhile, and on waking every peer would look silent for
the whole stall. A pulse thread notes the time every `PULSE_S`; a gap well over that is a stall
of this process, and it is credited to every peer's silence (checked again before each look at
the silences, which may come first after the wake). A peer's bound grows by this task's stalls.

Two facts of the gRPC runtime shape `PeerWatch` (measured on TF 2.21): a read on a session made
while the peer was alive ends at RunOptions.timeout_in_ms, but making a session to a stopped or
dead peer waits without a bound, and so does closing one. So each peer is read by a daemon
thread of its own, which makes its session only once the peer's port accepts connections, never
closes it, and is abandoned (never joined) if it blocks; callers only look at the samples it
leaves, so no caller ever waits on a peer.
"""
import dataclasses
import json
import socket
import threading
import time
import uuid

import tensorflow.compat.v1 as tf

from tfhp.cluster import errors

PROGRESS = 'tfhp_progress'
INFO = 'tfhp_task_info'


def cpu_device(job, index):
    """The CPU device of task (job, index), where its published state lives."""
    return '/job:%s/replica:0/task:%d/device:CPU:0' % (job, index)


def _handle(name, dtype, device):
    with tf.device(device):
        return tf.raw_ops.VarHandleOp(dtype=dtype, shape=[], shared_name=name, container='')


def advance_op(device):
    """An op (in the current graph) that advances the progress counter of the task on `device`.

    A worker groups it into its train op, so its counter moves exactly when it takes steps.
    """
    return tf.raw_ops.AssignAddVariableOp(resource=_handle(PROGRESS, tf.int64, device),
                                          value=tf.constant(1, tf.int64))


def read_progress(device):
    """The progress counter of the task on `device`, read (an op in the current graph)."""
    with tf.device(device):
        return tf.raw_ops.ReadVariableOp(resource=_handle(PROGRESS, tf.int64, device),
                                         dtype=tf.int64)


def describe(job, index, address, cluster, settings):
    """This task's JSON description: identity, a fresh incarnation, cluster and settings.

    Args:
      job, index, address: this task.
      cluster: {job: [address, ...]} as this task was told.
      settings: {name: value} that every worker must share (`agreement.settings`), or None for
        a task that builds no model (a ps started with the cluster flags only).
    """
    return json.dumps({'job': job, 'index': index, 'address': address,
                       'incarnation': uuid.uuid4().hex, 'cluster': cluster,
                       'settings': settings}, sort_keys=True)


class TaskState:
    """This task's published state: its description and its progress counter.

    Args:
      target: this task's server target.
      job, index: this task.
      info: its description (`describe`).
    """

    def __init__(self, target, job, index, info):
        device = cpu_device(job, index)
        graph = tf.Graph()
        with graph.as_default():
            publish = tf.group(
                tf.raw_ops.AssignVariableOp(resource=_handle(INFO, tf.string, device),
                                            value=tf.constant(info)),
                tf.raw_ops.AssignVariableOp(resource=_handle(PROGRESS, tf.int64, device),
                                            value=tf.constant(0, tf.int64)))
            self._advance = advance_op(device)
        config = tf.ConfigProto(device_filters=['/job:%s/task:%d' % (job, index)])
        # Its own task only: these runs never wait on a peer. Never closed (see the module doc).
        self._sess = tf.Session(target, graph=graph, config=config)
        self._sess.run(publish)
        self.info = json.loads(info)

    def advance(self):
        """Advances the counter: the task did some work (a serving loop turn, a phase ended)."""
        self._sess.run(self._advance)


@dataclasses.dataclass(frozen=True, order=True)
class Peer:
    """A peer task: its job, index and address."""
    job: str
    index: int
    address: str

    def __str__(self):
        return '%s task %d at %s' % (self.job, self.index, self.address)


def port_open(address, timeout_s=0.5):
    """Whether something accepts TCP connections at host:port (not proof of life, see above)."""
    host, port = address.rsplit(':', 1)
    try:
        with socket.create_connection((host.strip('[]'), int(port)), timeout=timeout_s):
            return True
    except OSError:
        return False


class _Status:
    """What the poller of one peer saw last; times are time.monotonic()."""

    def __init__(self, now):
        self.answered_at = now      # last read that returned (or the watch's start)
        self.progressed_at = now    # last change of (incarnation, counter) (or the start)
        self.ever_answered = False
        self.state = None           # (incarnation, counter) of the last read
        self.info = None            # the peer's description, once it published it
        self.last_error = 'not read yet'
        self.said_silent = False    # the 'stopped answering' event was given


class PeerReader:
    """Reads one peer's published state: a session made once its port accepts connections,
    remade after the peer went away, never closed (see the module doc).

    Args:
      target: this task's server target (reads go through its master).
      peer: the `Peer` to read.
      read_timeout_s: bound on one read.
    """

    def __init__(self, target, peer, read_timeout_s):
        self._target = target
        self._peer = peer
        self._read_timeout_s = read_timeout_s
        self._graph = tf.Graph()
        with self._graph.as_default():
            device = cpu_device(peer.job, peer.index)
            self._read = (
                tf.raw_ops.ReadVariableOp(resource=_handle(INFO, tf.string, device),
                                          dtype=tf.string),
                tf.raw_ops.ReadVariableOp(resource=_handle(PROGRESS, tf.int64, device),
                                          dtype=tf.int64))
        self._config = tf.ConfigProto(
            device_filters=['/job:%s/task:%d' % (peer.job, peer.index)])
        self._options = tf.RunOptions(timeout_in_ms=int(read_timeout_s * 1000))
        self._sess = None

    def read(self):
        """Reads the peer once; returns the outcome as `PeerWatch.record`'s keywords."""
        if self._sess is None and not port_open(self._peer.address):
            return {'error': 'connection refused'}
        if self._sess is None:
            self._sess = tf.Session(self._target, graph=self._graph, config=self._config)
        try:
            info, progress = self._sess.run(self._read, options=self._options)
            return {'info': info.decode(), 'progress': int(progress)}
        except tf.errors.DeadlineExceededError:
            return {'error': 'no answer within %g s' % self._read_timeout_s}
        except (tf.errors.FailedPreconditionError, tf.errors.NotFoundError):
            # The runtime answers but the task has not published yet: starting.
            return {'answered': True, 'error': 'starting'}
        except tf.errors.OpError as e:
            # Unavailable, Aborted, Cancelled: the peer went away. A new session is made once
            # its port opens again (a restarted task); this one is abandoned.
            self._sess = None
            return {'error': errors.cause(e.message, type(e).__name__)}


PULSE_S = 0.25  # how often the watch notes that this process runs
# A gap between pulses over this is this process's stall, not a slow thread's turn.
STALL_S = 1.0


def steady_interval(peer_timeout_s):
    """Seconds between reads of a peer while a job runs: four reads per --peer_timeout_s,
    between 0.5 and 5 s."""
    return min(5.0, max(0.5, peer_timeout_s / 4.0))


class PeerWatch:
    """Reads each peer's published state in a daemon thread of its own; never blocks a caller.

    Args:
      target: this task's server target (reads go through its master).
      peers: `Peer`s to watch.
      interval_s: seconds between reads of one peer.
      read_timeout_s: bound on one read.
      clock: the monotonic clock that silences are measured on.
      start: whether pollers read the peers; without them the caller `record`s reads (a test).
      on_event: on_event(line) is told of a peer's events as they are seen: it stopped
        answering (silent for longer than two reads take), it answers again, it rejoined (a
        new incarnation: the task was restarted). None: nobody is told.
      credit_stalls: leave this process's stalls out of its peers' silences (see the module
        doc; default: when the pollers run, with a pulse thread).
    """

    def __init__(self, target, peers, interval_s=0.5, read_timeout_s=2.0,
                 clock=time.monotonic, start=True, on_event=None, credit_stalls=None):
        self._target = target
        self._on_event = on_event
        self._interval_s = interval_s
        self._read_timeout_ms = int(read_timeout_s * 1000)
        self._clock = clock
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        now = clock()
        self._status = {peer: _Status(now) for peer in peers}
        credit_stalls = start if credit_stalls is None else credit_stalls
        self._pulse_at = now if credit_stalls else None  # None: no stall is credited
        self.stalled_s = 0.0  # this process's stalls, credited to every peer
        for peer in peers if start else ():
            threading.Thread(target=self._poll, args=(peer,), daemon=True,
                             name='peer_watch_%s_%d' % (peer.job, peer.index)).start()
        if start:
            threading.Thread(target=self._pulse, daemon=True, name='peer_watch_pulse').start()

    @property
    def peers(self):
        return list(self._status)

    def read_period_s(self):
        """How long a peer's poller may take to read it anew: two turns and one read."""
        return 2 * self._interval_s + self._read_timeout_ms / 1000.0

    def set_interval(self, interval_s):
        """Reads every interval_s from now on: less often once a job runs, where the bounds
        are --peer_timeout_s, not the fraction of a second a start-up wait wants."""
        self._interval_s = interval_s

    def stop(self):
        """Ends the pollers at their next turn (one blocked in the runtime stays blocked)."""
        self._stopped.set()

    def _pulse(self):
        while not self._stopped.wait(PULSE_S):
            self._credit_stall()

    def _credit_stall(self):
        """Notes that this process runs; a gap since the last note over STALL_S was its stall:
        every peer's silence is moved past it. Returns the clock's reading."""
        now = self._clock()
        with self._lock:
            if self._pulse_at is None:
                return now
            gap = now - self._pulse_at - PULSE_S
            if gap > STALL_S:
                self.stalled_s += gap
                for status in self._status.values():
                    status.answered_at = min(now, status.answered_at + gap)
                    status.progressed_at = min(now, status.progressed_at + gap)
            self._pulse_at = now
        return now

    def _poll(self, peer):
        reader = PeerReader(self._target, peer, self._read_timeout_ms / 1000.0)
        while not self._stopped.is_set():
            self.record(peer, **reader.read())
            self._stopped.wait(self._interval_s)

    def record(self, peer, info=None, progress=None, answered=False, error=None):
        """Takes one read of the peer (`PeerReader.read`'s outcome, as keywords).

        Args:
          peer: the `Peer` read.
          info: its description (JSON text), where the read returned it; it answered.
          progress: its progress counter, with info.
          answered: whether its runtime answered without a description (starting).
          error: what went wrong, in words, or None.
        """
        now = self._credit_stall()
        with self._lock:
            status = self._status[peer]
            event = None
            if info is not None:
                parsed = json.loads(info)
                state = (parsed['incarnation'], progress)
                if state != status.state:
                    status.progressed_at = now
                if status.state and status.state[0] != state[0]:
                    event = '%s rejoined (restarted: a new incarnation)' % peer
                status.state, status.info = state, parsed
                answered = True
            if answered:
                status.answered_at = now
                status.ever_answered = True
                if status.said_silent:
                    status.said_silent = False
                    event = event or '%s answers again' % peer
            elif (status.ever_answered and not status.said_silent and
                  now - status.answered_at > self.read_period_s()):
                status.said_silent = True
                event = '%s stopped answering (%s)' % (peer, error)
            status.last_error = error
        if event and self._on_event:
            self._on_event(event)

    def info(self, peer):
        """The peer's description (a dict), or None until it published one."""
        with self._lock:
            return self._status[peer].info

    def silence(self, peer):
        """(seconds since the peer last answered, since it last progressed, its last error),
        this task's own stalls left out."""
        now = self._credit_stall()
        with self._lock:
            status = self._status[peer]
            return now - status.answered_at, now - status.progressed_at, status.last_error

    def lost(self, peers, silent_s, still_s, answered_only=False):
        """The peers (of `peers`) that did not answer for silent_s or progress for still_s.

        With answered_only, only peers that answered at least once count (the others are still
        a start-up wait's to bound, with its own message).

        Returns:
          [(peer, why)] in the order of `peers`, `why` in words ('no answer for 12 s
          (connection refused)', 'no progress for 70 s').
        """
        lost = []
        for peer in peers:
            with self._lock:
                if answered_only and not self._status[peer].ever_answered:
                    continue
            unanswered, still, error = self.silence(peer)
            if unanswered > silent_s:
                lost.append((peer, 'no answer for %.0f s%s'
                             % (unanswered, ' (%s)' % error if error else '')))
            elif still > still_s:
                lost.append((peer, 'no progress for %.0f s' % still))
        return lost

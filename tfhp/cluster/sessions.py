"""Sessions for a task of a cluster: bounded, fast start-up; hooks; device filters.

The stock `MonitoredTrainingSession` makes non-chief workers poll the chief's initialisation
every 30 s, so a worker that asks a moment too early starts half a minute late, and it waits up
to 30 min before giving up. Here the initialising task (the chief, or every worker where each owns
its variables) restores or initialises, and the others poll readiness every `POLL_S` for at
most `timeout_s`, then fail naming the task they waited for.
"""
import tensorflow.compat.v1 as tf

from tfhp.cluster import servers

POLL_S = 0.1


def session_config(proto, device_filters):
    """A copy of ConfigProto `proto` that talks only to the tasks `device_filters` match.

    Filters keep a worker from waiting on (or failing with) tasks it never uses, e.g. the other
    workers of a parameter-server job.
    """
    config = tf.ConfigProto()
    config.CopyFrom(proto)
    config.device_filters.extend(device_filters)
    return config


class _BoundedSessionCreator(tf.train.SessionCreator):
    """Creates the session of one task: initialise-or-restore, or wait for whoever does."""

    def __init__(self, scaffold, master, config, initialise, checkpoint_dir, timeout_s,
                 waits_for, wait_for_peers):
        self._wait_for_peers = wait_for_peers
        self._scaffold = scaffold
        self._master = master
        self._config = config
        self._initialise = initialise
        self._checkpoint_dir = checkpoint_dir
        self._timeout_s = timeout_s
        self._waits_for = waits_for

    def create_session(self):
        # Also on a re-creation after a peer failed: the MonitoredSession retries creation
        # for as long as it fails with UnavailableError, so the bound must come from here.
        self._wait_for_peers()
        self._scaffold.finalize()
        manager = tf.train.SessionManager(
            local_init_op=self._scaffold.local_init_op,
            ready_op=self._scaffold.ready_op,
            ready_for_local_init_op=self._scaffold.ready_for_local_init_op,
            graph=tf.get_default_graph(), recovery_wait_secs=POLL_S)
        if self._initialise:
            return manager.prepare_session(
                self._master, init_op=self._scaffold.init_op, saver=self._scaffold.saver,
                checkpoint_dir=self._checkpoint_dir, config=self._config,
                init_fn=self._scaffold.init_fn)
        try:
            return manager.wait_for_session(self._master, config=self._config,
                                            max_wait_secs=self._timeout_s)
        except tf.errors.DeadlineExceededError:
            raise servers.ClusterError('%s did not initialise the model within %g s'
                                       % (self._waits_for, self._timeout_s)) from None


def monitored_session(master, config, saver, initialise, checkpoint_dir, hooks, timeout_s,
                      waits_for, wait_for_peers):
    """A `tf.train.MonitoredSession` with bounded start-up.

    Args:
      master: the session target (this task's server).
      config: the session's ConfigProto.
      saver: the Saver that restores from checkpoint_dir (and that checkpoint hooks use).
      initialise: True where this task initialises (or restores) the variables.
      checkpoint_dir: restore from its latest checkpoint when initialising; None never.
      hooks: SessionRunHooks.
      timeout_s: bound on waiting for the initialising task.
      waits_for: how error messages name the initialising task, e.g. 'chief worker 0 at h:p'.
      wait_for_peers: called before every session creation; raises if a peer is gone (e.g.
        `servers.wait_for_tasks` bound to this task's peers).
    Returns:
      A MonitoredSession (use as a context manager).
    Raises:
      servers.ClusterError: the initialising task did not finish within timeout_s.
    """
    scaffold = tf.train.Scaffold(saver=saver)
    creator = _BoundedSessionCreator(scaffold, master, config, initialise, checkpoint_dir,
                                     timeout_s, waits_for, wait_for_peers)
    # A short grace period: the threads a hook starts (the sync chief's update loop) block in
    # the runtime and are ended by closing the session, not by joining them.
    return tf.train.MonitoredSession(session_creator=creator, hooks=hooks,
                                     stop_grace_period_secs=1)

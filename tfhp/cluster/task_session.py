"""The session of one task of a cluster: hooks, a fast bounded start, and no recovery.

Why not `tf.train.MonitoredSession`:
  its non-chief workers poll the chief's initialisation every 30 s, so a worker that asks a
    moment too early starts half a minute late; here they poll every `POLL_S` for at most
    `timeout_s`, then fail naming the task they waited for;
  after a peer fails (UnavailableError) it recovers by closing the session and making a new
    one, and closing a session whose peer died waits without a bound: workers of a job whose ps
    was killed hung there, silent. A `TaskSession` never recovers; a failed run raises and the
    caller ends the task (`tfhp.cluster.watchdog`) without closing anything.
It runs `tf.train.SessionRunHook`s as MonitoredSession does (begin, after_create_session,
before_run/after_run, end at close), except that hooks may not ask for RunOptions.
"""
import tensorflow.compat.v1 as tf

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


class NotInitialised(Exception):
    """The initialising task did not initialise the model within the bound."""


def _create(scaffold, master, config, initialise, checkpoint_dir, timeout_s):
    manager = tf.train.SessionManager(
        local_init_op=scaffold.local_init_op, ready_op=scaffold.ready_op,
        ready_for_local_init_op=scaffold.ready_for_local_init_op,
        graph=tf.get_default_graph(), recovery_wait_secs=POLL_S)
    if initialise:
        return manager.prepare_session(master, init_op=scaffold.init_op, saver=scaffold.saver,
                                       checkpoint_dir=checkpoint_dir, config=config,
                                       init_fn=scaffold.init_fn)
    try:
        return manager.wait_for_session(master, config=config, max_wait_secs=timeout_s)
    except tf.errors.DeadlineExceededError:
        raise NotInitialised() from None


class TaskSession:
    """A session that runs hooks and never recovers (see the module docstring).

    Args:
      master: the session target (this task's server).
      config: the session's ConfigProto.
      saver: the Saver that restores from checkpoint_dir (and that checkpoint hooks use).
      initialise: True where this task initialises (or restores) the variables.
      checkpoint_dir: restore from its latest checkpoint when initialising; None never.
      hooks: SessionRunHooks.
      timeout_s: bound on waiting for the initialising task.
    Raises:
      NotInitialised: this task does not initialise and the one that does had not done so
        within timeout_s.
    """

    def __init__(self, master, config, saver, initialise, checkpoint_dir, hooks, timeout_s):
        self._hooks = list(hooks)
        for hook in self._hooks:
            hook.begin()
        scaffold = tf.train.Scaffold(saver=saver)
        scaffold.finalize()
        self._sess = _create(scaffold, master, config, initialise, checkpoint_dir, timeout_s)
        self._coord = tf.train.Coordinator()
        self._stop = False
        for hook in self._hooks:
            hook.after_create_session(self._sess, self._coord)

    @property
    def graph(self):
        return self._sess.graph

    def run(self, fetches, feed_dict=None, options=None, run_metadata=None):
        """Runs fetches, with every hook's before_run fetches; raises what any thread raised.

        feed_dict, options and run_metadata are `tf.Session.run`'s (the hooks' feeds join
        feed_dict; a traced step, `tfhp.session.run_traced`, passes all three)."""
        context = tf.train.SessionRunContext(tf.train.SessionRunArgs(fetches), self._sess)
        requests = []
        for hook in self._hooks:
            args = hook.before_run(context)
            if args is not None and args.options is not None:
                raise ValueError('tfhp.cluster.task_session: hooks may not set RunOptions (%r)'
                                 % hook)
            requests.append(args)
        hook_fetches = {i: args.fetches for i, args in enumerate(requests) if args is not None}
        feeds = dict(feed_dict or {})
        for args in requests:
            if args is not None and args.feed_dict:
                feeds.update(args.feed_dict)
        metadata = tf.RunMetadata() if run_metadata is None else run_metadata
        outputs = self._sess.run({'caller': fetches, 'hooks': hook_fetches}, feed_dict=feeds,
                                 options=options, run_metadata=metadata)
        for i, hook in enumerate(self._hooks):
            hook.after_run(context, tf.train.SessionRunValues(
                results=outputs['hooks'].get(i), options=options, run_metadata=metadata))
        self._stop = self._stop or context.stop_requested
        if self._coord.should_stop():
            self._coord.raise_requested_exception()
        return outputs['caller']

    def should_stop(self):
        """Whether a hook asked to stop."""
        return self._stop or self._coord.should_stop()

    def close(self):
        """The normal end: hooks' end (the chief's last checkpoint), then the session's close.

        Closing cancels the runs other threads have in flight (the sync chief's update loop).
        Never call it after a peer was lost: it would wait on the peer without a bound.
        """
        for hook in self._hooks:
            hook.end(self._sess)
        self._coord.request_stop()
        self._sess.close()

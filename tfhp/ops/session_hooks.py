"""Hooks that run ops of their own: once at session start, or over and over in threads.

RunAtStart: what managers and tasks need at session start (fill local copies from the masters,
take the chief's variables, set the job's end step) is an op to run once per session, including
a session made again after a restore; this is the one hook that does it.

RunInLoops: a protocol's work beside the steps (the sync chief's update loop, background
pulls, priority pushes) runs in threads of the hook's own, one op (or `Loop`) over and over,
until the session closes; those runs can be traced for a traced step (`trace_loops`,
`loop_traces`), since they are not part of the step's own run.
"""
import threading
import time

import tensorflow.compat.v1 as tf


class RunAtStart(tf.train.SessionRunHook):
    """Runs `fetches` once after each session is created.

    Args:
      fetches: an op, or anything `Session.run` takes.
    """

    def __init__(self, fetches):
        self._fetches = fetches

    def after_create_session(self, session, coord):
        del coord  # Nothing to coordinate: one run, in the creating thread.
        session.run(self._fetches)


class Loop:
    """One turn of a loop that is more than one op: runs of its own, chosen in Python.

    Attributes:
      name: names the loop's thread and its traced runs' lanes.
    """
    name = 'loop'

    def start(self, session, coord):
        """Called once a session is made, before any loop of it turns: state the turns share
        across sessions (see `priority_pushes`) is set for `session`, whose loops stop with
        `coord`."""
        del session, coord

    def __call__(self, session, traced_run):
        """One turn: runs in `session`; traced_run(fetches, feed_dict=None) is a run traced
        when a traced step wants it (tracing decided as it starts), for the runs worth seeing
        (not those that wait for the next step's work)."""
        raise NotImplementedError


class RunInLoops(tf.train.SessionRunHook):
    """Runs each of `loops` over and over, in a daemon thread of its own, from session start.

    A loop ends when its session is closed (its blocked run is cancelled), or on its first
    error, which it hands to the coordinator (the next step raises it).

    Args:
      loops: ops or `Loop`s, each run in a loop of its own.
    """

    def __init__(self, loops=()):
        self._loops = list(loops)
        self._lock = threading.Lock()
        self._tracing = False
        self._traces = []
        self._in_flight = 0  # traced runs of this generation not done yet
        self._generation = 0  # moved by each trace_loops and loop_traces
        self._callables = {}  # (session, fetches) -> callable, of the latest session

    def start_loops(self, session, coord):
        """Starts the threads (call from after_create_session)."""
        with self._lock:
            self._callables = {}  # an earlier session's, closed
        for loop in self._loops:
            if isinstance(loop, Loop):
                loop.start(session, coord)
        for loop in self._loops:
            # Not registered with the coordinator: a thread blocks (in take_grad, or on a token)
            # when the replicas stop, and closing the session is what ends it (a Loop waiting
            # in Python, a priority sender, ends on the coordinator's stop, which close asks).
            threading.Thread(target=self._loop, args=(session, coord, loop),
                             name='loop_%s' % loop.name.replace('/', '_'), daemon=True).start()

    def after_create_session(self, session, coord):
        self.start_loops(session, coord)

    def settle(self, session):
        """Returns once the loops' work for the steps run so far is done (e.g. the last
        step's pulls), so that what is read next sees it; here at once."""
        del session

    def trace_loops(self):
        """Traces every loop run that starts from now on, until `loop_traces`."""
        with self._lock:
            self._generation += 1
            self._tracing, self._traces, self._in_flight = True, [], 0

    def loop_traces(self, wait_s):
        """Stops tracing; returns [(loop op name, RunMetadata)] of the traced runs.

        Waits up to wait_s for traced runs still in flight: the pulls of a step end after the
        step does. A run that blocks until the next step (the chief's wait for gradients) is
        left out, as are runs that end after this call.
        """
        with self._lock:
            self._tracing = False
        deadline = time.monotonic() + wait_s
        while True:
            with self._lock:
                if not self._in_flight or time.monotonic() > deadline:
                    traces, self._traces, self._in_flight = self._traces, [], 0
                    self._generation += 1
                    return traces
            time.sleep(0.005)

    def _callable(self, session, fetches):
        """session's callable running `fetches` (made at its first use): a loop's run by
        callable skips the client's work of turning fetches into a run request (about a third
        of a small run's CPU, measured on a local gRPC session)."""
        key = (session, fetches)
        with self._lock:
            run = self._callables.get(key)
        if run is None:
            run = session.make_callable(fetches, accept_options=True)
            with self._lock:
                self._callables[key] = run
        return run

    def _loop(self, session, coord, op):
        def traced_run(fetches, feed_dict=None):
            return self._run(session, op.name, fetches, feed_dict)
        while not coord.should_stop():
            try:
                if isinstance(op, Loop):
                    op(session, traced_run)
                else:
                    traced_run(op)
            except (tf.errors.CancelledError, tf.errors.AbortedError, RuntimeError):
                return  # the session was closed or recreated
            except tf.errors.OpError as e:
                coord.request_stop(e)
                return

    def _run(self, session, name, fetches, feed_dict):
        """session.run, traced (and its trace kept under `name`) while tracing is on; an op or
        tensor fed nothing, by a callable made once a session (`_callable`)."""
        with self._lock:
            traced, generation = self._tracing, self._generation
            self._in_flight += traced
        options = tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE) if traced else None
        metadata = tf.RunMetadata() if traced else None
        if feed_dict or not isinstance(fetches, (tf.Operation, tf.Tensor)):
            value = session.run(fetches, feed_dict=feed_dict, options=options,
                                run_metadata=metadata)
        else:
            value = self._callable(session, fetches)(options=options, run_metadata=metadata)
        if traced:
            with self._lock:
                if generation == self._generation:  # else collected (or given up) already
                    self._in_flight -= 1
                    self._traces.append((name, metadata))
        return value


def settle(session, hooks):
    """Waits for the work beside the steps run so far of each `RunInLoops` among `hooks`."""
    for hook in hooks:
        if isinstance(hook, RunInLoops):
            hook.settle(session)

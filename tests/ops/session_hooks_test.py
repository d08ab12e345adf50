"""RunInLoops: a loop's op runs over and over by one callable a session (not a session.run a
turn), and its runs are traced while a traced step wants them."""
import time

import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.ops import session_hooks


class _CountingSession:
    """A session that counts the runs and callables asked of it."""

    def __init__(self, session):
        self._session = session
        self.runs, self.callables = 0, 0

    def run(self, *args, **kwargs):
        self.runs += 1
        return self._session.run(*args, **kwargs)

    def make_callable(self, *args, **kwargs):
        self.callables += 1
        return self._session.make_callable(*args, **kwargs)


def test_a_loop_op_runs_by_one_callable_a_session_and_is_traced_when_asked():
    with tf.Graph().as_default():
        turns = tf.Variable(0, dtype=tf.int64)
        turn = turns.assign_add(1)
        hook = session_hooks.RunInLoops([turn.op])
        with tf.Session() as raw:
            raw.run(turns.initializer)
            for _ in range(2):  # a session made again gets callables of its own
                session, coord = _CountingSession(raw), tf.train.Coordinator()
                start = raw.run(turns)
                hook.start_loops(session, coord)
                assert testing.wait_for(lambda: raw.run(turns) > start + 20)
                hook.trace_loops()
                traced_from = raw.run(turns)  # every turn after this one started traced
                assert testing.wait_for(lambda: raw.run(turns) > traced_from + 20)
                traces = hook.loop_traces(wait_s=5.0)
                coord.request_stop()
                assert (session.callables, session.runs) == (1, 0)
                assert traces and all(name == turn.op.name for name, _ in traces)
                assert any(node.node_name == turn.op.name
                           for _, metadata in traces
                           for device in metadata.step_stats.dev_stats
                           for node in device.node_stats)
                time.sleep(0.1)  # the loop sees the stop before the next session

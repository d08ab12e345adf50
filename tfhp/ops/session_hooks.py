"""RunAtStart: a SessionRunHook that runs ops each time a session is created.

What managers and tasks need at session start (fill local copies from the masters, take the
chief's variables, set the job's end step) is an op to run once per session, including a session
made again after a restore; this is the one hook that does it.
"""
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

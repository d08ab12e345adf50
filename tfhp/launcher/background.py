"""A loop in a daemon thread beside a running job, for as long as a `with` block lasts.

A subclass defines `_run`, which loops until `self._done` is set (waiting on it, so that the
block's end stops it at once); `__exit__` sets it and joins the thread, bounded: a loop stuck in
a system call is abandoned, never waited for. Imports no TensorFlow.
"""
import threading

_JOIN_S = 5.0


class Background:
    """Runs `self._run()` in a daemon thread from the `with` block's start to its end."""

    def __init__(self):
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name=type(self).__name__.lower())

    def _run(self):
        raise NotImplementedError

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._done.set()
        self._thread.join(timeout=_JOIN_S)

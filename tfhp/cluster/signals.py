"""Graceful stop: SIGTERM and SIGINT become a stop request, taken even while the task waits.

Python runs a signal handler only when the main thread runs Python code, and a task's main
thread spends its time inside `session.run`, where a synchronous step may wait for minutes. So
the signals are blocked in every thread (the mask is set before TensorFlow starts any, and
threads inherit it) and one thread takes them with `sigwait`, at once, whatever the main thread
is doing. The first signal calls the registered callbacks (the task asks its job to stop and
bounds its own stop); a second one ends the process at once with 128 + its number.
"""
import os
import signal
import sys
import threading

SIGNALS = (signal.SIGTERM, signal.SIGINT)


def exit_status(signum):
    """The exit status of a process stopped by signal `signum`: 128 + its number."""
    return 128 + signum


class StopSignals:
    """The stop signals of this process, taken by a thread of their own.

    Call `install()` before TensorFlow is imported (its threads must inherit the mask).
    """

    def __init__(self):
        self._lock = threading.Lock()
        self._callbacks = []
        self.signum = None

    @property
    def requested(self):
        """Whether a stop signal has arrived."""
        return self.signum is not None

    def install(self):
        """Blocks SIGTERM and SIGINT in this thread (and its future threads) and takes them."""
        signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
        threading.Thread(target=self._take, name='stop_signals', daemon=True).start()
        return self

    def on_stop(self, callback):
        """Calls callback(signum) on the first stop signal (at once if one already arrived)."""
        with self._lock:
            self._callbacks.append(callback)
            signum = self.signum
        if signum is not None:
            callback(signum)

    def _take(self):
        while True:
            signum = signal.sigwait(SIGNALS)
            with self._lock:
                first = self.signum is None
                if first:
                    self.signum = signum
                callbacks = list(self._callbacks)
            if not first:
                sys.stderr.write('tfhp: second %s: exiting now\n' % signal.Signals(signum).name)
                sys.stderr.flush()
                os._exit(exit_status(signum))  # pylint: disable=protected-access
            for callback in callbacks:
                callback(signum)

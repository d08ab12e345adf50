"""The last bound behind every wait of a task: the phases of its work and its essential peers.

A task's main thread waits inside the runtime (making or closing a session, a step, a
checkpoint), and some of those waits have no bound of their own: closing a session whose peer
died, or making one to a stopped peer, waits forever (measured, TF 2.21). A watchdog thread ends
the task, with one line naming the cause, when
  the current phase of its work (`Watchdog.phase`) runs past its bound, which the caller derives
    from --peer_timeout_s and --step_timeout_s;
  an essential peer (one without which this task cannot go on: its ps tasks, the chief, the
    in-graph client) did not answer for `silent_s` or made no progress for `still_s`;
  a peer published a description that disagrees with this task's (`agreement.mismatch`).
The main thread asks it to end the task the same way when a step fails (`fail`), with the peers
most likely to blame (`culprits`), so the task never tries to close a session that would wait on
the lost peer. Ending the task is the caller's `fail` function; the command line's
(`exit_process`) prints the line and exits without the interpreter's teardown.
"""
import os
import re
import sys
import threading
import time

from tfhp.cluster import agreement

# How the gRPC runtime's errors name the task a failed call went to.
_REMOTE = re.compile(r'remote target /job:(\w+)/replica:\d+/task:(\d+)')
EXIT_LOST = 1      # a peer was lost or a phase overran: the run failed
EXIT_MISMATCH = 2  # the job is configured against itself: a setting is at fault
POLL_S = 0.2


def exit_process(message, status):
    """Prints 'tfhp: error: <message>' and ends the process with `status` at once.

    os._exit: the interpreter's teardown would close sessions, which can wait on a lost peer.
    """
    sys.stdout.flush()
    sys.stderr.write('tfhp: error: %s\n' % message)
    sys.stderr.flush()
    os._exit(status)  # pylint: disable=protected-access


class Watchdog:
    """Ends this task when a phase overruns, an essential peer is lost, or a peer disagrees.

    Args:
      task: how messages name this task, e.g. 'worker 1 at 127.0.0.1:5001'.
      fail: fail(message, status) ends the task; called at most once.
      watch: the `liveness.PeerWatch` of this task's peers.
      essential: the peers whose loss ends this task.
      silent_s: an essential peer that did not answer for this long is lost (--peer_timeout_s).
      still_s: an essential peer that answers but made no progress for this long is lost.
      mine: this task's description, to check every peer's against (`agreement.mismatch`);
        None checks nothing.
      clock: the monotonic clock that phases' deadlines are measured on.
      start: whether a thread looks every POLL_S; without it the caller calls `check` (a test).
    """

    def __init__(self, task, fail, watch, essential, silent_s, still_s, mine,
                 clock=time.monotonic, start=True):
        self._task = task
        self._fail = fail
        self._watch = watch
        self._essential = list(essential)
        self._silent_s = silent_s
        self._still_s = still_s
        self._mine = mine
        self._lock = threading.Lock()
        self._last_words = None  # (callable, bound_s): run before the task is ended
        self._advice = None  # callable -> what to do next, after a lost peer or overrun
        self._phase = None  # (what, bound_s, deadline, status)
        self._stop = None   # the same, for a stop: later phases do not move its deadline
        self._failed = False
        self._ended = threading.Event()  # set once `fail` returned (only a test's does)
        self._checked = set()
        self._clock = clock
        if start:
            threading.Thread(target=self._run, name='watchdog', daemon=True).start()

    def phase(self, what, bound_s, status=EXIT_LOST):
        """Starts a phase of the work that must end within bound_s (None: no bound)."""
        with self._lock:
            self._phase = (what, bound_s, self._clock() + bound_s if bound_s else None,
                           status)

    def stop_by(self, what, bound_s, status):
        """Bounds the rest of the task's work (a stop signal's): it ends within bound_s."""
        with self._lock:
            if self._stop is None:
                self._stop = (what, bound_s, self._clock() + bound_s, status)

    def last_words(self, callback, bound_s):
        """Calls callback(lost) before ending the task (e.g. telling the ps it failed), with the
        peers known lost (not to be waited on), in a thread that is given bound_s."""
        self._last_words = (callback, bound_s)

    def advise(self, advice):
        """advice() -> a sentence saying what to do next (e.g. the command that resumes),
        added to the line of a failure with EXIT_LOST."""
        self._advice = advice

    def fail(self, message, status=EXIT_LOST, lost=()):
        """Ends the task with '<task>: <message>' (only the first call does anything).

        Args:
          message: the line, without this task's name.
          status: the exit status.
          lost: `Peer`s known to be gone (the last words skip them).
        """
        with self._lock:
            if self._failed:
                return
            self._failed = True
        self._watch.stop()
        if self._last_words:
            callback, bound_s = self._last_words
            thread = threading.Thread(target=callback, args=(set(lost),), name='last_words',
                                      daemon=True)
            thread.start()
            thread.join(bound_s)
        if status == EXIT_MISMATCH:
            # Still answering for a few reads, so that the peers see the disagreement
            # themselves and exit naming it too, not later for a peer that vanished.
            time.sleep(self._watch.read_period_s())
        if status == EXIT_LOST and self._advice:
            message = '%s; %s' % (message, self._advice())
        self._fail('%s: %s' % (self._task, message), status)
        self._ended.set()

    def await_failure(self):
        """Waits for the task to end if the watchdog is ending it, else returns at once.

        The main thread calls it on an error: an error that the watchdog's own ending caused
        (its last words, a peer leaving in the meantime) must not end the task first, with a
        traceback instead of the line naming the cause.
        """
        with self._lock:
            failed = self._failed
        if failed:
            self._ended.wait()

    def named_in(self, text):
        """The watched peers that a runtime error's text names as its remote target."""
        named = set(_REMOTE.findall(text))
        return [p for p in self._watch.peers if (p.job, str(p.index)) in named]

    def culprits(self):
        """The peers most likely behind a stalled wait, in words, or ''.

        Peers that stopped answering first; else those that answer but made no progress, all
        of them (a hung peer and the peers waiting for it look alike from here).
        """
        answer_s = self._watch.read_period_s()  # a live peer answered since
        silent, still = [], []
        for peer in self._watch.peers:
            unanswered, no_progress, error = self._watch.silence(peer)
            if unanswered > answer_s:
                silent.append('%s (no answer for %.0f s: %s)' % (peer, unanswered, error))
            elif no_progress > answer_s:
                still.append('%s (no progress for %.0f s)' % (peer, no_progress))
        if silent:
            return 'lost ' + ', '.join(silent)
        if still:
            return 'every peer answers; stalled: ' + ', '.join(still)
        return ''

    def _run(self):
        while True:
            time.sleep(POLL_S)
            if self.check():
                return

    def check(self):
        """One look: ends the task if a bound ran out, a peer disagrees or an essential peer is
        lost (in that order). Returns whether the task is ending (now or before)."""
        with self._lock:
            phases, failed = (self._phase, self._stop), self._failed
        if failed:
            return True
        for phase in phases:
            if phase and phase[2] is not None and self._clock() > phase[2]:
                what, bound_s, _, status = phase
                blame = self.culprits()
                self.fail('%s did not end within %g s%s' % (
                    what, bound_s, '; ' + blame if blame else ''), status)
                return True
        for peer in self._watch.peers if self._mine else ():
            info = self._watch.info(peer)
            if info is not None and (peer, info['incarnation']) not in self._checked:
                self._checked.add((peer, info['incarnation']))
                why = agreement.mismatch(self._mine, info, peer)
                if why:
                    self.fail(why, EXIT_MISMATCH)
                    return True
        lost = self._watch.lost(self._essential, self._silent_s, self._still_s,
                                answered_only=True)
        if lost:
            self.fail('lost %s' % ', '.join('%s: %s' % item for item in lost),
                      lost=[peer for peer, _ in lost])
            return True
        return False

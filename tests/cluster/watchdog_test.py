"""The watchdog without a cluster: its looks (`Watchdog.check`) on a fake clock, over a
PeerWatch fed reads by hand, ending the task through a fake `fail` that records the line."""
import json
import types

import pytest

from tfhp.cluster import liveness
from tfhp.cluster import watchdog

TASK = 'worker 1 at 127.0.0.1:5002'
PS = liveness.Peer('ps', 0, '127.0.0.1:5000')
CHIEF = liveness.Peer('worker', 0, '127.0.0.1:5001')
CLUSTER = {'ps': [PS.address], 'worker': [CHIEF.address, '127.0.0.1:5002']}
SETTINGS = {'model': 'trivial', 'batch_size': 32}


class Clock:
    """A monotonic clock that moves only when a test says."""

    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def _info(peer, settings=None):
    return liveness.describe(peer.job, peer.index, peer.address, CLUSTER,
                             settings or SETTINGS)


class Job:
    """A watchdog of worker 1 (essential peer: the ps), its watch and what it ended with."""

    def __init__(self, mine=None):
        self.clock = Clock()
        self.failures = []  # (line, status) of each call of `fail`
        self.watch = liveness.PeerWatch('grpc://unused', [PS, CHIEF], interval_s=0.5,
                                        read_timeout_s=2.0, clock=self.clock, start=False)
        self.dog = watchdog.Watchdog(TASK, lambda *args: self.failures.append(args),
                                     self.watch, [PS], silent_s=12, still_s=30, mine=mine,
                                     clock=self.clock, start=False)
        self.infos = {peer: _info(peer) for peer in (PS, CHIEF)}
        self.counters = {PS: 0, CHIEF: 0}  # each peer's progress counter

    def advance(self, seconds, answering=(PS, CHIEF), progressing=(PS, CHIEF)):
        """Moves the clock; `answering` peers are read then, `progressing` ones advanced."""
        self.clock.now += seconds
        for peer in answering:
            self.counters[peer] += peer in progressing
            self.watch.record(peer, info=self.infos[peer], progress=self.counters[peer])


def test_a_phase_that_ends_within_its_bound_ends_nothing():
    job = Job()
    job.dog.phase('step 1', 5.0)
    job.advance(4.9)
    job.dog.phase('step 2', 5.0)  # a new phase: its own deadline
    job.advance(4.9)
    assert job.dog.check() is False
    job.dog.phase('writing the result', None)  # no bound
    for _ in range(100):
        job.advance(10)
        assert job.dog.check() is False
    assert job.failures == []


def test_a_phase_past_its_bound_ends_the_task_naming_it():
    job = Job()
    job.dog.phase('step 3', 5.0)
    job.advance(5.0)
    assert job.dog.check() is False  # at the bound, not past it
    job.advance(0.1)
    assert job.dog.check() is True
    assert job.failures == [('%s: step 3 did not end within 5 s' % TASK, watchdog.EXIT_LOST)]
    assert job.dog.check() is True  # it ended once; later looks only say so
    assert len(job.failures) == 1


def test_an_overrun_names_the_peer_that_stopped_answering():
    job = Job()
    job.advance(1)
    job.dog.phase('step 7', 10.0, status=3)
    for _ in range(11):
        job.advance(1, answering=[CHIEF])
        job.watch.record(PS, error='connection refused')
    assert job.dog.check() is True
    assert job.failures == [(
        '%s: step 7 did not end within 10 s; lost ps task 0 at 127.0.0.1:5000 (no answer for '
        '11 s: connection refused)' % TASK, 3)]


def test_an_overrun_where_every_peer_answers_names_the_stalled_ones():
    job = Job()
    job.dog.phase('step 2', 8.0)
    for _ in range(9):
        job.advance(1, progressing=[PS])
    assert job.dog.check() is True
    assert job.failures == [(
        '%s: step 2 did not end within 8 s; every peer answers; stalled: worker task 0 at '
        '127.0.0.1:5001 (no progress for 8 s)' % TASK, watchdog.EXIT_LOST)]


def test_a_stop_bounds_the_rest_of_the_work_whatever_phases_follow():
    job = Job()
    job.dog.stop_by('stopping after SIGTERM', 10.0, 143)
    job.advance(6)
    job.dog.stop_by('stopping after SIGINT', 10.0, 130)  # the first stop's bound stands
    job.dog.phase('closing the session', 100.0)
    job.advance(4)
    assert job.dog.check() is False
    job.advance(1)
    assert job.dog.check() is True
    assert job.failures == [('%s: stopping after SIGTERM did not end within 10 s' % TASK, 143)]


def test_an_essential_peer_silent_past_silent_s_ends_the_task_after_its_last_words():
    job = Job()
    job.advance(1)
    said = []
    job.dog.last_words(lambda lost: said.append((sorted(lost), list(job.failures))), 1.0)
    for _ in range(12):
        job.advance(1, answering=[CHIEF])
        job.watch.record(PS, error='connection refused')
        assert job.dog.check() is False
    job.advance(1, answering=[CHIEF])
    assert job.dog.check() is True
    assert job.failures == [('%s: lost ps task 0 at 127.0.0.1:5000: no answer for 13 s '
                             '(connection refused)' % TASK, watchdog.EXIT_LOST)]
    # The last words ran first, told that the ps is gone (so they do not wait on it).
    assert said == [([PS], [])]


def test_an_essential_peer_without_progress_for_still_s_ends_the_task():
    job = Job()
    job.advance(1)  # the first read is progress: from nothing read to a counter
    for _ in range(30):
        job.advance(1, progressing=[CHIEF])
        assert job.dog.check() is False
    job.advance(1, progressing=[CHIEF])
    assert job.dog.check() is True
    assert job.failures == [('%s: lost ps task 0 at 127.0.0.1:5000: no progress for 31 s'
                             % TASK, watchdog.EXIT_LOST)]


def test_peers_that_are_not_essential_or_never_answered_do_not_end_the_task():
    job = Job()
    job.advance(1, answering=[CHIEF])
    for _ in range(100):
        # The chief answered once, then went silent, but is not essential; the ps never
        # answered (bounding that is the start-up wait's job).
        job.clock.now += 1
        assert job.dog.check() is False
    assert job.watch.lost([PS, CHIEF], 12, 30) == [
        (PS, 'no answer for 101 s (not read yet)'), (CHIEF, 'no answer for 100 s')]
    assert job.failures == []


def test_a_peer_that_disagrees_ends_the_task_naming_the_flag(monkeypatch):
    sleeps = []
    monkeypatch.setattr(watchdog, 'time', types.SimpleNamespace(sleep=sleeps.append))
    job = Job(mine=json.loads(_info(liveness.Peer('worker', 1, '127.0.0.1:5002'))))
    job.advance(1)
    assert job.dog.check() is False  # both agree
    job.infos[CHIEF] = _info(CHIEF, dict(SETTINGS, batch_size=64))  # restarted, differently
    job.advance(1)
    assert job.dog.check() is True
    assert job.failures == [(
        '%s: worker task 0 at 127.0.0.1:5001 disagrees with this task: --batch_size: 64 there, '
        '32 here' % TASK, watchdog.EXIT_MISMATCH)]
    # It answered a while longer, so that the peer names the disagreement too.
    assert sleeps == [3.0]


def test_fail_acts_once_stops_the_watch_and_releases_await_failure():
    job = Job()
    job.dog.await_failure()  # nothing failed: returns at once
    job.dog.fail('step 4 failed (Socket closed)', lost=[PS])
    job.dog.fail('a later error')
    job.dog.await_failure()
    assert job.failures == [('%s: step 4 failed (Socket closed)' % TASK, watchdog.EXIT_LOST)]
    assert job.watch._stopped.is_set()  # pylint: disable=protected-access


@pytest.mark.parametrize('text, named', [
    ('Socket closed\nremote target /job:ps/replica:0/task:0 failed', [PS]),
    ('From remote target /job:worker/replica:0/task:0 and remote target '
     '/job:ps/replica:0/task:0', [PS, CHIEF]),
    ('remote target /job:ps/replica:0/task:1', []),
    ('Deadline Exceeded', [])])
def test_named_in_finds_the_watched_peers_an_error_names(text, named):
    assert Job().dog.named_in(text) == named


def test_a_lost_peer_line_says_how_to_resume_but_a_disagreement_does_not(monkeypatch):
    sleeps = []  # the disagreement's answering a while longer, recorded instead of slept
    monkeypatch.setattr(watchdog, 'time', types.SimpleNamespace(sleep=sleeps.append))
    job = Job()
    job.dog.advise(lambda: 'start the job again with the same flags: it resumes from step 30')
    job.dog.fail('lost ps task 0 at %s' % PS.address)
    assert job.failures == [('%s: lost ps task 0 at %s; start the job again with the same '
                             'flags: it resumes from step 30' % (TASK, PS.address),
                             watchdog.EXIT_LOST)]
    other = Job()
    other.dog.advise(lambda: 'never said')
    other.dog.fail('--batch_size: 4 there, 2 here', watchdog.EXIT_MISMATCH)
    assert other.failures == [('%s: --batch_size: 4 there, 2 here' % TASK,
                               watchdog.EXIT_MISMATCH)]
    assert sleeps == [3.0]  # only the disagreement answers on, for two turns and a read

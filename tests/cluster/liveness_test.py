"""Liveness without a cluster: a PeerWatch fed reads on a fake clock, a PeerReader on a fake
session, and a TaskState on an in-process session (no server, no other process)."""
import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp.cluster import liveness

PS = liveness.Peer('ps', 0, '127.0.0.1:5000')
CHIEF = liveness.Peer('worker', 0, '127.0.0.1:5001')
CLUSTER = {'ps': [PS.address], 'worker': [CHIEF.address, '127.0.0.1:5002']}


class Clock:
    """A monotonic clock that moves only when a test says."""

    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, seconds):
        self.now += seconds


def _info(peer):
    return liveness.describe(peer.job, peer.index, peer.address, CLUSTER, None)


def _watch(clock):
    return liveness.PeerWatch('grpc://unused', [PS, CHIEF], clock=clock, start=False)


@pytest.mark.parametrize('peer_timeout_s, interval_s', [
    (0.4, 0.5), (2.0, 0.5), (3.0, 0.75), (8.0, 2.0), (20.0, 5.0), (60.0, 5.0)])
def test_steady_interval_is_a_quarter_of_the_peer_timeout_within_half_a_second_and_5_s(
        peer_timeout_s, interval_s):
    assert liveness.steady_interval(peer_timeout_s) == interval_s


def test_describe_names_the_task_with_a_fresh_incarnation_each_time():
    first, second = json.loads(_info(PS)), json.loads(_info(PS))
    assert {k: v for k, v in first.items() if k != 'incarnation'} == {
        'job': 'ps', 'index': 0, 'address': '127.0.0.1:5000', 'cluster': CLUSTER,
        'settings': None}
    assert len(first['incarnation']) == 32
    assert first['incarnation'] != second['incarnation']


def test_a_peer_never_read_is_silent_since_the_start_but_lost_only_to_a_start_up_wait():
    clock = Clock()
    watch = _watch(clock)
    assert watch.silence(PS) == (0.0, 0.0, 'not read yet')
    clock.advance(100)
    assert watch.silence(PS) == (100.0, 100.0, 'not read yet')
    # The watchdog asks with answered_only: a peer that never answered is the start-up's.
    assert watch.lost([PS, CHIEF], 12, 30, answered_only=True) == []
    assert watch.lost([PS, CHIEF], 12, 30) == [
        (PS, 'no answer for 100 s (not read yet)'), (CHIEF, 'no answer for 100 s (not read yet)')]


def test_a_peer_that_answers_without_progress_is_lost_once_still_for_still_s():
    clock = Clock()
    watch = _watch(clock)
    info = _info(PS)
    watch.record(PS, info=info, progress=7)
    assert watch.info(PS)['incarnation'] == json.loads(info)['incarnation']
    for _ in range(7):  # answers every 5 s with the same counter
        clock.advance(5)
        watch.record(PS, info=info, progress=7)
    assert watch.silence(PS) == (0.0, 35.0, None)
    assert watch.lost([PS], 12, 35, answered_only=True) == []
    clock.advance(1)
    assert watch.lost([PS], 12, 35, answered_only=True) == [(PS, 'no progress for 36 s')]
    watch.record(PS, info=info, progress=8)  # a step: progress again
    assert watch.silence(PS) == (0.0, 0.0, None)
    assert watch.lost([PS], 12, 35, answered_only=True) == []


def test_a_peer_that_stops_answering_is_lost_after_silent_s_and_back_when_it_restarts():
    clock = Clock()
    watch = _watch(clock)
    watch.record(PS, info=_info(PS), progress=3)
    for _ in range(4):
        clock.advance(3)
        watch.record(PS, error='connection refused')
    assert watch.silence(PS) == (12.0, 12.0, 'connection refused')
    assert watch.lost([PS, CHIEF], 12, 60, answered_only=True) == []  # not past the bound
    clock.advance(1.4)
    assert watch.lost([PS, CHIEF], 12, 60, answered_only=True) == [
        (PS, 'no answer for 13 s (connection refused)')]
    # Restarted: a new incarnation whose counter starts over is progress, not the old state.
    restarted = _info(PS)
    watch.record(PS, info=restarted, progress=0)
    assert watch.silence(PS) == (0.0, 0.0, None)
    assert watch.info(PS)['incarnation'] == json.loads(restarted)['incarnation']
    assert watch.lost([PS, CHIEF], 12, 60, answered_only=True) == []


def test_a_new_incarnation_with_the_same_counter_is_progress():
    clock = Clock()
    watch = _watch(clock)
    watch.record(PS, info=_info(PS), progress=0)
    clock.advance(20)
    watch.record(PS, info=_info(PS), progress=0)
    assert watch.silence(PS) == (0.0, 0.0, None)


def test_a_starting_peer_answers_but_neither_progresses_nor_has_a_description():
    clock = Clock()
    watch = _watch(clock)
    clock.advance(4)
    watch.record(CHIEF, answered=True, error='starting')
    assert watch.silence(CHIEF) == (0.0, 4.0, 'starting')
    assert watch.info(CHIEF) is None
    clock.advance(30)
    # It answered once, so the watchdog's bounds apply to it now.
    assert watch.lost([CHIEF], 12, 60, answered_only=True) == [
        (CHIEF, 'no answer for 30 s (starting)')]


def test_read_period_is_two_turns_and_one_read_and_follows_the_interval():
    watch = liveness.PeerWatch('grpc://unused', [PS], interval_s=0.5, read_timeout_s=2.0,
                               start=False)
    assert watch.read_period_s() == 3.0
    watch.set_interval(liveness.steady_interval(20.0))
    assert watch.read_period_s() == 12.0


def test_peer_reader_maps_each_read_to_what_the_watch_records(monkeypatch):
    info = _info(PS)
    ports = [False, True, False, True]  # checked only while there is no session
    outcomes = [
        (info.encode(), np.int64(3)),
        tf.errors.DeadlineExceededError(None, None, 'deadline'),
        tf.errors.FailedPreconditionError(None, None, 'not initialized'),
        tf.errors.UnavailableError(None, None, 'From /job:ps/replica:0/task:0:\nSocket closed'),
        (info.encode(), np.int64(4))]
    made = []  # the device filters of each session made

    class FakeSession:
        def __init__(self, target, graph, config):
            assert target == 'grpc://localhost:5002'
            made.append(list(config.device_filters))

        def run(self, fetches, options):
            assert options.timeout_in_ms == 2000
            outcome = outcomes.pop(0)
            if isinstance(outcome, Exception):
                raise outcome
            return outcome

    monkeypatch.setattr(liveness, 'port_open', lambda address: ports.pop(0))
    monkeypatch.setattr(liveness.tf, 'Session', FakeSession)
    reader = liveness.PeerReader('grpc://localhost:5002', PS, 2.0)
    assert reader.read() == {'error': 'connection refused'}
    assert made == []  # no session to a port that refuses: making one may never return
    assert reader.read() == {'info': info, 'progress': 3}
    assert reader.read() == {'error': 'no answer within 2 s'}
    assert reader.read() == {'answered': True, 'error': 'starting'}
    assert reader.read() == {'error': 'Socket closed'}
    assert made == [['/job:ps/task:0']]
    # The peer went away: its port is checked again before a new session is made.
    assert reader.read() == {'error': 'connection refused'}
    assert reader.read() == {'info': info, 'progress': 4}
    assert made == [['/job:ps/task:0']] * 2
    assert ports == [] and outcomes == []


def test_task_state_publishes_its_description_and_a_counter_that_advance_moves_by_one():
    # 'localhost' is the job of an in-process session's devices: no server needed.
    info = liveness.describe('localhost', 0, 'in-process', {'localhost': ['in-process']}, None)
    state = liveness.TaskState('', 'localhost', 0, info)
    assert state.info == json.loads(info)
    device = liveness.cpu_device('localhost', 0)
    with state._sess.graph.as_default():  # pylint: disable=protected-access
        read = liveness.read_progress(device)
    sess = state._sess  # pylint: disable=protected-access
    assert sess.run(read) == 0
    state.advance()
    state.advance()
    state.advance()
    assert sess.run(read) == 3


def test_a_peers_events_are_told_once_each_and_a_slow_read_is_no_event():
    clock, events = Clock(), []
    watch = liveness.PeerWatch('grpc://unused', [PS], clock=clock, start=False,
                               on_event=events.append)
    watch.record(PS, info=_info(PS), progress=1)
    # One failed read within the time two reads take (2 x 0.5 s + 2 s) is no event.
    clock.advance(2.0)
    watch.record(PS, error='deadline exceeded')
    watch.record(PS, info=watch.info(PS) and json.dumps(watch.info(PS)), progress=2)
    assert events == []
    for _ in range(3):  # silent past 3 s: told once
        clock.advance(1.5)
        watch.record(PS, error='connection refused')
    assert events == ['ps task 0 at 127.0.0.1:5000 stopped answering (connection refused)']
    watch.record(PS, info=_info(PS), progress=0)  # back, as a new incarnation
    assert events[1:] == ['ps task 0 at 127.0.0.1:5000 rejoined (restarted: a new incarnation)']
    clock.advance(5.0)
    watch.record(PS, error='connection refused')
    watch.record(PS, info=json.dumps(watch.info(PS)), progress=1)  # the same incarnation
    assert events[2:] == ['ps task 0 at 127.0.0.1:5000 stopped answering (connection refused)',
                          'ps task 0 at 127.0.0.1:5000 answers again']


def test_this_tasks_own_stall_is_not_a_silence_of_its_peers():
    clock = Clock()
    watch = liveness.PeerWatch('grpc://unused', [PS, CHIEF], clock=clock, start=False,
                               credit_stalls=True)
    watch.record(PS, info=_info(PS), progress=1)
    watch.record(CHIEF, info=_info(CHIEF), progress=1)
    clock.now += 0.25
    watch.record(PS, error='no answer within 2 s')  # the ps is silent from here on
    # This process stops for 30 s (SIGSTOP): nobody read anybody meanwhile.
    clock.now += 30
    assert watch.lost([PS, CHIEF], 12, 60) == []
    assert watch.stalled_s == pytest.approx(30 - liveness.PULSE_S)
    # Awake, the silence that is seen counts again: the ps stays silent, the chief answers.
    for _ in range(60):
        clock.now += liveness.PULSE_S
        watch.record(PS, error='no answer within 2 s')
        watch.record(CHIEF, info=_info(CHIEF), progress=2)
    # 15 s awake, and a pulse's turn before and after the stall: 15.5 s.
    assert watch.lost([PS, CHIEF], 12, 60) == [(PS, 'no answer for 16 s (no answer within 2 s)')]

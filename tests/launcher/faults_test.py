"""Injected faults (`tfhp.launcher.faults`): the --inject grammar, the injector on real processes
and a fake network, and the schedule that fires at a global step. No TensorFlow, no root."""
import os
import signal
import subprocess
import sys
import time

import pytest

from tests import testing
from tfhp import launch
from tfhp.launcher import faults
from tfhp.launcher import progress_log


@pytest.mark.parametrize('text, fault', [
    ('kill:worker1@15', faults.Fault('kill', ('worker', 1), 15, None, None)),
    ('pause:ps0@7+2.5', faults.Fault('pause', ('ps', 0), 7, 2.5, None)),
    ('link_down:worker0@20+3', faults.Fault('link_down', ('worker', 0), 20, 3.0, None)),
    ('slow_link:worker2@10+30x10', faults.Fault('slow_link', ('worker', 2), 10, 30.0, 10.0)),
    ('slow_link:worker2@10x4', faults.Fault('slow_link', ('worker', 2), 10, None, 4.0))])
def test_a_fault_is_read_from_its_flag(text, fault):
    assert faults.parse(text) == fault


@pytest.mark.parametrize('text, message', [
    ('kill:worker1', 'use KIND:TASK@STEP'),
    ('melt:worker1@3', "no fault kind 'melt'"),
    ('pause:worker1@3', 'a pause needs \\+SECONDS'),
    ('link_down:worker1@3', 'a link_down needs \\+SECONDS'),
    ('slow_link:worker1@3+2', 'takes xFACTOR > 1'),
    ('slow_link:worker1@3x1', 'takes xFACTOR > 1'),
    ('kill:worker1@3x2', 'takes xFACTOR > 1')])
def test_a_fault_that_cannot_be_is_refused_naming_the_flag(text, message):
    with pytest.raises(ValueError, match='--inject=%s: .*%s' % (text.replace('+', '\\+'),
                                                                message)):
        faults.parse(text)


def test_the_launcher_refuses_a_fault_its_job_cannot_take(capsys):
    with pytest.raises(SystemExit) as raised:
        launch.main(['--num_workers=2', '--inject=kill:worker2@3', '--', '--model=trivial'])
    assert raised.value.code == 2
    assert '--inject=kill:worker2...: the job has no worker 2' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        launch.main(['--inject=link_down:worker1@3+1', '--', '--model=trivial'])
    assert 'a link_down needs emulated links (--link_bandwidth)' in capsys.readouterr().err
    with pytest.raises(SystemExit):
        launch.main(['--link_bandwidth=1gbit', '--colocate_ps', '--num_ps=2',
                     '--inject=link_down:ps1@3+1', '--', '--model=trivial'])
    assert ('--inject=link_down:ps1...: with --colocate_ps ps 1 has no NIC of its own (it '
            "shares worker 1's)") in capsys.readouterr().err
    with pytest.raises(SystemExit):
        launch.main(['--link_port_buffer=1mb', '--', '--model=trivial'])
    assert '--link_port_buffer needs --link_bandwidth' in capsys.readouterr().err
    for retired in ('--link_queue=fifo', '--link_rto_min_ms=10'):  # until commit 52a41b8
        with pytest.raises(SystemExit):
            launch.main(['--link_bandwidth=1gbit', retired, '--', '--model=trivial'])
        assert 'unrecognized arguments: %s' % retired in capsys.readouterr().err
    for size, message in (('lots', "'lots' is not a size"),
                          ('64kb', 'port_buffer_bytes (--link_port_buffer) is 65536; a port must '
                                   'hold at least 70000 bytes')):
        with pytest.raises(SystemExit):
            launch.main(['--link_bandwidth=1gbit', '--link_port_buffer=' + size, '--',
                         '--model=trivial'])
        assert message in capsys.readouterr().err
    with pytest.raises(SystemExit):
        launch.main(['--link_port_buffer=1mb', '--', '--model=trivial'])
    assert '--link_port_buffer needs --link_bandwidth' in capsys.readouterr().err


def _state(pid):
    with open('/proc/%d/stat' % pid) as f:
        return f.read().rsplit(')', 1)[1].split()[0]


@pytest.fixture
def sleeper():
    proc = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])
    yield proc
    proc.kill()
    proc.wait()


def test_a_pause_stops_the_task_for_its_seconds_and_is_recorded(sleeper, tmp_path):
    lines = []
    injector = faults.Injector(lines.append)
    injector.progress_path = str(tmp_path / 'progress')
    injector.attach({('worker', 1): sleeper}, None)
    with open(injector.progress_path, 'w') as f:
        f.write('1 2.0\n12 1.5\n')  # the chief's steps so far
    record = injector.inject('pause', ('worker', 1), for_s=0.5)
    assert testing.wait_for(lambda: _state(sleeper.pid) == 'T')
    assert record['ended_s'] is None
    assert testing.wait_for(lambda: _state(sleeper.pid) in 'SR')
    assert testing.wait_for(lambda: record['ended_s'] is not None)
    assert record['ended_s'] - record['at_s'] == pytest.approx(0.5, abs=0.3)
    assert (record['kind'], record['task'], record['attempt'], record['global_step']) == (
        'pause', 'worker 1', 1, 12)
    assert lines == ['injected pause into worker 1 for 0.5 s', 'ended pause of worker 1']


def test_an_attempt_that_ends_ends_its_faults_and_takes_no_more(sleeper):
    injector = faults.Injector(lambda line: None)
    injector.attach({('worker', 1): sleeper}, None)
    record = injector.inject('pause', ('worker', 1), for_s=60)
    assert testing.wait_for(lambda: _state(sleeper.pid) == 'T')
    injector.detach()  # continued at once, so that the launcher can stop it
    assert _state(sleeper.pid) in 'SR' and record['ended_s'] is not None
    assert injector.inject('kill', ('worker', 1)) is None
    injector.attach({('worker', 1): sleeper}, None)
    assert injector.inject('kill', ('worker', 1))['attempt'] == 2
    assert sleeper.wait(5) == -signal.SIGKILL
    assert injector.inject('pause', ('worker', 1), for_s=1) is None  # dead: nothing to do


class _FakeNetwork:
    def __init__(self):
        self.calls, self.rate = [], 1e9

    def set_link(self, task, up):
        self.calls.append(('link', task, up))

    def rate_bps(self, task):
        return self.rate

    def set_rate(self, task, rate):
        self.calls.append(('rate', task, rate))
        self.rate = rate


def test_link_faults_act_on_the_network_and_undo_themselves(sleeper):
    network = _FakeNetwork()
    injector = faults.Injector(lambda line: None)
    injector.attach({('worker', 0): sleeper}, network)
    down = injector.inject('link_down', ('worker', 0), for_s=0.2)
    slow = injector.inject('slow_link', ('worker', 0), for_s=0.2, factor=10)
    assert testing.wait_for(lambda: down['ended_s'] is not None and slow['ended_s'] is not None)
    assert sorted(network.calls, key=str) == sorted([
        ('link', ('worker', 0), False), ('link', ('worker', 0), True),
        ('rate', ('worker', 0), 1e8), ('rate', ('worker', 0), 1e9)], key=str)


def test_the_schedule_fires_each_fault_once_at_its_global_step(sleeper, tmp_path):
    injector = faults.Injector(lambda line: None)
    injector.progress_path = str(tmp_path / 'progress')
    with open(injector.progress_path, 'w') as f:
        f.write('40 1.0\n')  # an earlier job's line: no step of this one
    injector.attach({('worker', 1): sleeper}, None)
    assert injector.logged_step() is None
    schedule = [faults.parse('pause:worker1@5+0.1'), faults.parse('pause:worker1@3+0.1')]
    with faults.Schedule(schedule, injector, poll_s=0.01):
        for step in range(1, 8):
            with open(injector.progress_path, 'a') as f:
                f.write('%d 1.0\n' % step)
            time.sleep(0.1)
    assert [r['global_step'] for r in injector.records] == [3, 5]


def test_the_progress_log_is_read_whole_lines_only_and_split_by_attempt(tmp_path):
    path = str(tmp_path / 'progress')
    assert progress_log.read(path) == [] and progress_log.last_step(path) is None
    with open(path, 'w') as f:
        f.write(''.join('%d %r\n' % (s, 1.0 / s) for s in range(1, 2001)) + '1996 0.')
    entries = progress_log.read(path)
    assert len(entries) == 2000 and entries[0] == (1, 1.0)
    assert progress_log.last_step(path) == 2000  # read from the tail alone
    with open(path, 'a') as f:
        f.write('5\n1997 0.4\n')
    restarted_at = progress_log.size(path)
    with open(path, 'a') as f:
        f.write('1998 0.4\n1999 0.3\n')
    runs = progress_log.attempts(path)  # split where the step goes back
    assert [(n, r[0][0], r[-1][0]) for n, r in runs] == [(1, 1, 2000), (2, 1996, 1999)]
    # Split where each attempt started: one that resumed at the step reached is seen, and
    # one that took no step keeps its number.
    runs = progress_log.attempts(path, [0, restarted_at, restarted_at])
    assert [(n, r[0][0], r[-1][0]) for n, r in runs] == [(1, 1, 1997), (3, 1998, 1999)]
    assert progress_log.read(path, start=restarted_at) == [(1998, 0.4), (1999, 0.3)]


def test_a_progress_file_is_added_only_where_the_job_has_none(tmp_path):
    with progress_log.ensured(['--model=trivial']) as (args, path):
        assert args == ['--model=trivial', '--progress_file=' + path]
        assert os.path.isdir(os.path.dirname(path))
    assert not os.path.exists(os.path.dirname(path))
    given = str(tmp_path / 'log')
    with progress_log.ensured(['--progress_file', given]) as (args, path):
        assert path == given and args == ['--progress_file', given]

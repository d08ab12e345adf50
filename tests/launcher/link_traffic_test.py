"""NIC counters of a job's timed window: parsing, interpolation, the per-step report."""
import os
import subprocess
import sys
import time

import pytest

from tfhp.launcher import link_traffic

NET_DEV = """Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo:     120       2    0    0    0     0          0         0      120       2    0    0    0     0       0          0
  eth0: 5000000    3500    0    0    0     0          0         0  2000000    1800    0    0    0     0       0          0
"""


def test_net_dev_gives_sent_and_received_of_eth0():
    assert link_traffic.parse_net_dev(NET_DEV) == (2000000, 5000000)
    assert link_traffic.parse_net_dev(NET_DEV, 'lo') == (120, 120)
    assert link_traffic.parse_net_dev(NET_DEV, 'eth1') is None


def test_a_task_is_named_by_its_flags():
    argv = ['ip', 'netns', 'exec', 'ns', 'python', '-m', 'tfhp', '--model=lenet',
            '--job_name=worker', '--task_index=3', '']
    assert link_traffic.task_of(argv) == ('worker', 3)
    assert link_traffic.task_of(['python', '--job_name=ps']) == ('ps', 0)
    assert link_traffic.task_of(['sleep', '5']) is None


def test_counters_are_interpolated_at_the_window_edges():
    series = [(10.0, 0), (11.0, 100), (13.0, 300)]
    assert link_traffic.interpolate(series, 10.5) == 50
    assert link_traffic.interpolate(series, 12.0) == 200
    assert link_traffic.interpolate(series, 9.0) == 0      # before the first sample
    assert link_traffic.interpolate(series, 20.0) == 300   # after the last
    samples = {('ps', 0): [(10.0, 0, 0), (11.0, 100, 40), (13.0, 300, 80)]}
    assert link_traffic.window_bytes(samples, 10.5, 12.0) == {('ps', 0): (150.0, 40.0)}


def test_timed_report_counts_the_chiefs_window_in_link_bytes_per_global_step():
    # Start-up sends 1000 bytes before the window (t 0-1) and 1000 after it (t 3-4); the
    # window (t 1-3) holds 2 global steps of 400 bytes sent and 200 received each.
    samples = {('ps', 0): [(0.0, 0, 0), (1.0, 1000, 0), (3.0, 1800, 400), (4.0, 2800, 400)]}
    link_tasks = {'ps 0': {'link_bps': 8000.0, 'bytes_sent': 2940, 'bytes_received': 420}}
    chief = {'timed_start_time': 1.0, 'end_times': [2.0, 3.0], 'global_steps_per_sec': 1.0}
    report = link_traffic.timed_report(samples, link_tasks, chief)
    ps = report['tasks']['ps 0']
    # The token bucket counted 5% more than the interface (frame headers): 2940 / 2800.
    assert ps['bytes_sent_per_step'] == pytest.approx(400 * 1.05)
    assert ps['bytes_received_per_step'] == pytest.approx(200 * 1.05)
    assert ps['comm_bound_ms'] == pytest.approx(1000 * 8 * 420 / 8000.0)
    assert report['comm_bound_ms'] == ps['comm_bound_ms']
    assert (report['window_s'], report['global_steps']) == (2.0, 2.0)
    assert link_traffic.timed_report(samples, link_tasks, {'end_times': []}) is None
    assert link_traffic.timed_report({}, link_tasks, chief) is None


def test_sampler_reads_only_children_in_a_namespace_of_their_own():
    # A child in this process's namespace (a loopback task) is not sampled.
    child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(2)',
                              '--job_name=worker', '--task_index=0'])
    try:
        sampler = link_traffic.NicSampler()
        deadline = time.monotonic() + 30
        # Until the child has exec'd, it shows our command line and is no task yet.
        while child.pid not in sampler._tasks:  # pylint: disable=protected-access
            assert time.monotonic() < deadline
            sampler.sample()
            time.sleep(0.01)
        sampler.sample()
        assert sampler.samples == {}
    finally:
        child.kill()
        child.wait()
    assert os.path.exists('/proc/self/ns/net')


def test_a_child_first_seen_before_its_exec_is_sampled_once_it_is_a_task(monkeypatch, tmp_path):
    # Between fork and exec a child shows the launcher's command line; a sampler that
    # remembered "no task" then never sampled that ps (found with null_dense at 300mbit).
    cmdline = tmp_path / 'cmdline'
    net_dev = tmp_path / 'net_dev'
    net_dev.write_text('Inter-|\n  eth0: 500 1 0 0 0 0 0 0 700 2 0 0 0 0 0 0\n')
    files = {'/proc/42/cmdline': cmdline, '/proc/42/net/dev': net_dev}
    real_open = open
    monkeypatch.setattr(link_traffic, '_children', lambda pid: [42])
    monkeypatch.setattr(link_traffic.os, 'readlink',
                        lambda path: 'net:[other]' if path.startswith('/proc/42/') else 'net:[own]')
    monkeypatch.setattr('builtins.open', lambda path, *a, **k: real_open(
        files.get(path, path), *a, **k))
    sampler = link_traffic.NicSampler()
    cmdline.write_text('python\0-m\0experiments.links_study\0')
    sampler.sample()
    cmdline.write_text('python\0-m\0tfhp\0--job_name=ps\0--task_index=0\0')
    sampler.sample()
    assert [s[1:] for s in sampler.samples[('ps', 0)]] == [(700, 500)]

"""Jobs on emulated links: the launcher's --link_bandwidth (root, namespaces and tc only)."""
import json
import signal
import subprocess
import sys
import time

import pytest

from tests.cluster import jobs
from tfhp import launch
from tfhp.launcher import links
from tfhp.launcher import local_job

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _job_namespaces(pid):
    return [n for n in links._namespaces() if n.startswith('%s%d-' % (links.PREFIX, pid))]  # pylint: disable=protected-access


def test_a_job_on_shaped_links_reports_its_traffic_and_leaves_nothing(tmp_path, links_available):
    result = tmp_path / 'job.jsonl'
    argv = [sys.executable, '-m', 'tfhp.launch', '--num_ps=1', '--num_workers=2',
            '--link_bandwidth=200mbit', '--ps_link_bandwidth=100mbit',
            '--result_file=%s' % result, '--'] + jobs.SMALL + ['--num_batches=20']
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=jobs.ROOT, start_new_session=True)
    try:
        output = proc.communicate(timeout=jobs.JOB_TIMEOUT_S)[0]
    finally:
        jobs.end(proc)
    assert proc.returncode == 0, output[-3000:]
    assert not _job_namespaces(proc.pid)
    report = json.loads(result.read_text())['links']
    ps, worker = report['tasks']['ps 0'], report['tasks']['worker 0']
    assert (ps['link_bps'], worker['link_bps']) == (1e8, 2e8)
    assert report['tcp'] == links.congestion_control()
    assert report['port_buffer_bytes'] is None  # the default
    # Every step each worker reads the 49,355 float32 variables (197 KB) from the ps and sends
    # back a gradient of that size; the ps moves both workers' share.
    assert worker['bytes_received_per_step'] > 197e3 and worker['bytes_sent_per_step'] > 197e3
    assert ps['bytes_sent_per_step'] > 2 * 197e3
    assert report['comm_bound_ms'] == pytest.approx(
        max(t['comm_bound_ms'] for t in report['tasks'].values()))
    # A synchronous job: the ps's steps are the global steps, and the bound is per global step.
    assert ps['comm_bound_ms'] == pytest.approx(
        1000 * 8 * max(ps['bytes_sent_per_step'], ps['bytes_received_per_step']) / 1e8)
    assert report['global_step_ms'] >= report['comm_bound_ms']
    # Each task's losses are counted (links_test makes some happen); the job sums the timeouts,
    # and the launcher prints a line for each task that lost something.
    lossy = [t for t in report['tasks'].values()
             if t['dropped_sent'] or t['dropped_received'] or t['tcp_retransmits']
             or t['tcp_timeouts']]
    assert report['tcp_timeouts'] == sum(t['tcp_timeouts'] for t in report['tasks'].values())
    assert output.count(' link lost: ') == len(lossy)


def test_colocated_ps_tasks_share_their_workers_hosts(links_available, monkeypatch):
    made = []

    class Recorded(links.EmulatedNetwork):
        def __init__(self, tasks, *args, **kwargs):
            made.append(list(tasks))
            super().__init__(tasks, *args, **kwargs)
    monkeypatch.setattr(links, 'EmulatedNetwork', Recorded)
    summary, results = local_job.launch_job(
        2, 2, jobs.SMALL + ['--num_batches=10', '--variable_update=distributed_replicated'],
        timeout_s=jobs.JOB_TIMEOUT_S, link_bandwidth='1gbit', colocate_ps=True)
    assert summary['status'] == 0, summary
    # Only the workers have hosts: each ps task listened on its worker's address, port 2223,
    # which exists in that worker's namespace alone.
    assert made == [[('worker', 0), ('worker', 1)]]
    assert summary['exit_codes'] == {'ps 0': 0, 'ps 1': 0, 'worker 0': 0, 'worker 1': 0}
    assert set(summary['links']['tasks']) == {'worker 0', 'worker 1'}
    # Each NIC sends 2 (W-1)/W of the 197 KB model a step (its worker's gradients for the
    # other ps, its ps's variables to the other worker): both together at least 2 x 197 KB.
    sent = [t['bytes_sent_per_step'] for t in summary['links']['tasks'].values()]
    assert sum(sent) > 2 * 197e3
    assert results[('worker', 0)]['num_steps'] == 10


def test_sigterm_to_a_launcher_on_shaped_links_leaves_nothing(tmp_path, links_available):
    argv = [sys.executable, '-m', 'tfhp.launch', '--num_ps=1', '--num_workers=1',
            '--link_bandwidth=1gbit', '--'] + jobs.SMALL + ['--num_batches=100000',
                                                           '--display_every=10']
    log_path = tmp_path / 'launch.log'
    with open(log_path, 'w') as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=jobs.ROOT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + jobs.JOB_TIMEOUT_S
        while '[worker 0] step 10\t' not in log_path.read_text():
            assert proc.poll() is None and time.monotonic() < deadline, (
                log_path.read_text()[-3000:])
            time.sleep(0.1)
        assert _job_namespaces(proc.pid)
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(timeout=jobs.JOB_TIMEOUT_S)
    finally:
        jobs.end(proc)
    assert status == 128 + signal.SIGTERM, log_path.read_text()[-3000:]
    assert not _job_namespaces(proc.pid)


def test_links_are_refused_where_the_machine_cannot_make_them(monkeypatch, capsys):
    # The probe is faked: whether this machine can make namespaces is not assumed.
    def unavailable():
        raise links.LinksUnavailable('not root (uid 1000): emulated links need root')
    monkeypatch.setattr(links, 'check_available', unavailable)
    assert launch.main(['--link_bandwidth=1gbit', '--'] + jobs.SMALL) == 2
    err = capsys.readouterr().err
    assert err == 'tfhp-launch: error: not root (uid 1000): emulated links need root\n'


def test_a_bad_rate_is_refused_naming_it(capsys):
    assert launch.main(['--link_bandwidth=fast', '--'] + jobs.SMALL) == 2
    assert "'fast' is not a rate" in capsys.readouterr().err

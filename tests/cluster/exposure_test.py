"""Who can reach a task's server: a task on a network it did not create says so in one line,
with how long --linger_s and --serve_clients keep it open (`servers.exposure`); a hand-started
job runs where nothing outside it reaches its servers."""
import socket

import pytest

from tests.cluster import jobs
from tfhp import config as config_lib
from tfhp.cluster import servers
from tfhp.launcher import private_net

HOSTS = {'ps_hosts': ('10.0.0.1:2222',), 'worker_hosts': ('10.0.0.2:2222', '10.0.0.3:2223')}


def _cluster(**fields):
    return config_lib.ClusterConfig(**dict(HOSTS, **fields))


def test_a_task_whose_namespace_has_only_a_loopback_says_nothing():
    assert servers.exposure(_cluster(job_name='ps'), ['lo'], serving=True) is None


def test_a_task_on_the_machines_network_names_its_port_interfaces_and_the_caveat():
    line = servers.exposure(_cluster(job_name='worker', task_index=1, linger_s=30),
                            ['lo', 'eth0'], serving=False)
    assert line == ('worker task 1 listens on port 2223 of every interface here (lo, eth0), '
                    'unauthenticated: whoever reaches it can run any op in this process, as '
                    'its user (read and write files); run the job on a trusted network only '
                    '(docs/security.md)')


def test_a_lingering_or_client_serving_ps_says_how_long_it_stays_open():
    lingering = servers.exposure(_cluster(job_name='ps', linger_s=30), ['lo', 'eth0'], True)
    assert lingering.endswith('. It stays open up to 30 s after the tasks it serves end '
                              '(--linger_s)')
    serving = servers.exposure(_cluster(job_name='ps', linger_s=600, serve_clients=True),
                               ['lo', 'eth0'], True)
    assert serving.endswith('. It serves any client for up to 600 s (--serve_clients, '
                            '--linger_s)')


@pytest.mark.cluster
@pytest.mark.slow
def test_a_hand_started_ps_prints_its_line(tmp_path):
    if set(servers.interfaces()) <= {'lo'}:
        pytest.skip('this process runs in a namespace with only a loopback: no one outside '
                    'reaches a task here')
    job = jobs.hand_started(tmp_path, 1, 1, ['--linger_s=7', '--peer_timeout_s=5'],
                            private=False)  # the line of a task on the machine's network
    try:
        job.start(('ps', 0))
        port = job.address(('ps', 0)).rsplit(':', 1)[1]
        expected = servers.exposure(_cluster(job_name='ps', linger_s=7, ps_hosts=(
            job.address(('ps', 0)),)), servers.interfaces(), True)
        assert expected and 'port %s of every interface' % port in expected
        job.wait_for_line(('ps', 0), expected, timeout_s=120)
    finally:
        job.end_all()


@pytest.mark.cluster
def test_a_hand_started_job_is_out_of_reach_and_leaves_no_namespace(tmp_path):
    why = private_net.probe()
    if why:
        pytest.skip(why)
    job = jobs.hand_started(tmp_path, 1, 1, ['--peer_timeout_s=60'])
    ps = ('ps', 0)
    try:
        job.start(ps)
        job.wait_for_servers([ps], 120)
        assert job.procs[ps].poll() is None, job.log(ps)[-2000:]  # it listens, in its namespace
        host, port = job.address(ps).rsplit(':', 1)
        with pytest.raises(ConnectionRefusedError):  # from this process: nobody there
            socket.create_connection((host, int(port)), timeout=5).close()
        assert job.network.name in jobs.namespaces()
        assert 'listens on port' not in job.log(ps)  # only a loopback: no line to print
    finally:
        job.end_all()
    assert job.network.name not in jobs.namespaces()

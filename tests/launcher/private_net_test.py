"""A local job's own network (`private_net`): nothing outside the job reaches its servers, a
machine that cannot give it one is said to, and no namespace outlives its job."""
import io
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
import tensorflow.compat.v1 as tf

from tests.cluster import jobs
from tfhp.launcher import local_job
from tfhp.launcher import plan
from tfhp.launcher import private_net

ROOT = jobs.ROOT
TEST_PREFIX = 'tfhptest-'


@pytest.fixture
def can_isolate():
    why = private_net.probe()
    if why:
        pytest.skip('this machine cannot create a network namespace: %s' % why)


def _commands(tmp_path):
    return plan.task_commands(1, 2, ['--model=trivial'], str(tmp_path))


def test_the_ports_of_a_job_are_read_from_its_commands(tmp_path):
    commands = plan.task_commands(1, 2, [], str(tmp_path), controller=True, hosts={
        'ps': ['127.0.0.1:7001'], 'worker': ['127.0.0.1:7003', '127.0.0.1:7002'],
        'controller': ['127.0.0.1:7004']})
    assert private_net.ports(commands) == [7001, 7002, 7003, 7004]


def test_without_a_namespace_the_job_runs_as_it_was_and_says_once_which_ports_are_open(
        monkeypatch, tmp_path):
    monkeypatch.setattr(private_net, 'probe', lambda: 'a network namespace needs root')
    commands = _commands(tmp_path)
    said = []
    with private_net.isolated(commands, said.append) as run:
        assert run == commands
    ports = ', '.join(str(p) for p in private_net.ports(commands))
    assert said == [private_net.open_warning(commands, 'a network namespace needs root')]
    assert 'ports %s of every interface' % ports in said[0]
    assert '(a network namespace needs root)' in said[0]


def test_the_probe_wants_root_and_iproute2(monkeypatch):
    monkeypatch.setattr(os, 'geteuid', lambda: 1000)
    assert private_net.probe() == ('a network namespace needs root; this process runs as uid '
                                   '1000')
    monkeypatch.setattr(os, 'geteuid', lambda: 0)
    monkeypatch.setattr(private_net.shutil, 'which', lambda tool: None)
    assert 'needs `ip` (iproute2)' in private_net.probe()


def test_every_command_runs_in_one_namespace_with_only_a_loopback_gone_after(can_isolate,
                                                                             tmp_path):
    commands = _commands(tmp_path)
    said = []
    with private_net.isolated(commands, said.append) as run:
        names = {tuple(argv[:4]) for argv in run.values()}
        assert len(names) == 1 and list(names)[0][:3] == ('ip', 'netns', 'exec')
        name = list(names)[0][3]
        assert {t: argv[4:] for t, argv in run.items()} == commands
        inside = subprocess.run(['ip', 'netns', 'exec', name, 'ip', '-j', 'link', 'show'],
                                capture_output=True, text=True, timeout=10, check=True)
        links = json.loads(inside.stdout)
        assert [(link['ifname'], 'UP' in link['flags']) for link in links] == [('lo', True)]
    assert not said
    assert name not in jobs.namespaces(name)


def test_a_lingering_job_says_where_a_client_must_run(can_isolate, tmp_path):
    said = []
    with private_net.isolated(_commands(tmp_path), said.append, lingering=True) as run:
        name = run[('ps', 0)][3]
    assert len(said) == 1 and 'ip netns exec %s python -m tfhp.reconnect' % name in said[0]


_CREATOR = '''
import time
from tfhp.launcher import private_net
network = private_net.PrivateNetwork(prefix=%r)
print(network.name, flush=True)
time.sleep(30)
''' % TEST_PREFIX


def test_a_killed_launchers_namespace_is_removed_by_the_next_one(can_isolate):
    child = subprocess.Popen([sys.executable, '-c', _CREATOR], stdout=subprocess.PIPE,
                             text=True, env=dict(os.environ, PYTHONPATH=ROOT))
    try:
        name = child.stdout.readline().strip()
        assert jobs.namespaces(name) == [name]
    finally:
        child.kill()
        child.wait(timeout=10)
    private_net.PrivateNetwork(prefix=TEST_PREFIX).close()  # cleans up before it creates
    assert not jobs.namespaces(TEST_PREFIX)


def outside_read(address, path, timeout_ms=5000):
    """What a client that is no part of the job reads of `path` on the ps task at `address`
    (tf.io.read_file placed there), or the name of the error it got. gRPC retries a port that
    refuses until the session's operation timeout: a DeadlineExceededError."""
    graph = tf.Graph()
    with graph.as_default(), tf.device('/job:ps/task:0'):
        read = tf.io.read_file(path)
    session = tf.Session('grpc://' + address, graph=graph,
                         config=tf.ConfigProto(device_filters=['/job:ps'],
                                               operation_timeout_in_ms=timeout_ms))
    try:
        return session.run(read, options=tf.RunOptions(timeout_in_ms=timeout_ms))
    except tf.errors.OpError as e:
        return type(e).__name__


class _OutsideClient:
    """Stands in for a fault injector (`launch_job`'s `injector`): once the tasks started, it
    waits until the ps task listens and reads a file through it from this process."""

    def __init__(self, secret):
        self.secret = secret
        self.got = None
        self.address = None
        self._thread = None
        self.records = []  # the faults it injected (an injector's): none

    def attach(self, procs, _):
        ps = procs[('ps', 0)]
        self.address = plan.flag_value(ps.args, 'ps_hosts').split(',')[0]
        port = int(self.address.rsplit(':', 1)[1])

        def probe():
            deadline = time.monotonic() + 120
            while not private_net.listens(ps.pid, port):
                if time.monotonic() > deadline:
                    self.got = 'the ps task never listened'
                    return
                time.sleep(0.05)
            self.got = outside_read(self.address, self.secret)
        self._thread = threading.Thread(target=probe, daemon=True)
        self._thread.start()

    def detach(self):
        self._thread.join(timeout=30)


def _job(tmp_path):
    secret = tmp_path / 'secret'
    secret.write_text('the ps host\'s file')
    client = _OutsideClient(str(secret))
    out = io.StringIO()
    summary, _ = local_job.launch_job(
        1, 2, jobs.SMALL + ['--num_batches=200', '--peer_timeout_s=20'], out=out,
        injector=client, timeout_s=jobs.JOB_TIMEOUT_S)
    return summary, client, out.getvalue()


@pytest.mark.cluster
@pytest.mark.slow
def test_no_client_outside_a_launched_job_reaches_its_ps_and_the_job_finishes(can_isolate,
                                                                              tmp_path):
    before = jobs.namespaces()
    summary, client, output = _job(tmp_path)
    assert summary['status'] == 0, output[-3000:]
    assert client.got in ('UnavailableError', 'DeadlineExceededError'), (client.got,
                                                                        output[-3000:])
    assert 'open to anyone' not in output and 'unauthenticated' not in output
    assert jobs.namespaces() == before == []


@pytest.mark.cluster
@pytest.mark.slow
def test_where_no_namespace_can_be_made_the_job_says_so_and_its_ps_is_open(monkeypatch,
                                                                           tmp_path):
    monkeypatch.setattr(private_net, 'probe', lambda: 'a network namespace needs root')
    summary, client, output = _job(tmp_path)
    assert summary['status'] == 0, output[-3000:]
    port = client.address.rsplit(':', 1)[1]
    warnings = [line for line in output.splitlines() if 'open to anyone' in line]
    assert len(warnings) == 1 and port in warnings[0], output[-3000:]
    assert warnings[0].startswith('[launch] the job\'s tasks listen on ports ')
    # What the warning is about: a client that is no part of the job read the ps host's file.
    assert client.got == b'the ps host\'s file'
    # Each task says it too, naming its own port.
    assert '[ps 0] ps task 0 listens on port %s of every interface here' % port in output


def test_sigterm_to_a_launcher_removes_its_namespace(can_isolate):
    script = ('import time\nfrom tfhp.launcher import links, private_net\n'
              'with links.exit_on_sigterm(), private_net.isolated({("ps", 0): ["x"]}, print) '
              'as commands:\n    print(commands[("ps", 0)][3], flush=True)\n'
              '    time.sleep(30)\n')
    child = subprocess.Popen([sys.executable, '-c', script], stdout=subprocess.PIPE, text=True,
                             env=dict(os.environ, PYTHONPATH=ROOT))
    name = child.stdout.readline().strip()
    assert jobs.namespaces(name) == [name]
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=10) == 128 + signal.SIGTERM
    assert not jobs.namespaces(name)


def test_a_process_that_enters_its_own_network_serves_on_a_loopback_only(can_isolate):
    # In a child: entering moves the process for good.
    script = ('import socket\n'
              'from tfhp.launcher import private_net\n'
              'assert private_net.enter() is None\n'
              'names = [l.split(":")[0].strip() for l in open("/proc/self/net/dev")][2:]\n'
              'server = socket.create_server(("127.0.0.1", 0))\n'
              'print(names, server.getsockname()[1], flush=True)\n'
              'input()\n')
    proc = subprocess.Popen([sys.executable, '-c', script], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        names, port = proc.stdout.readline().rsplit(' ', 1)
        assert names == "['lo']"
        # The child listens in its namespace; from this one, nobody is there.
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(('127.0.0.1', int(port)), timeout=5).close()
    finally:
        proc.communicate('\n', timeout=30)
    assert proc.returncode == 0

"""Slurm's environment to a task's cluster (tfhp.config.slurm, --cluster_resolver=slurm), with
Slurm's variables and scontrol faked: a script on PATH that prints the expansion a test gives it
and records how it was called."""
import os
import signal
import subprocess
import sys

import pytest

from tests.cluster import jobs
from tfhp import cli
from tfhp import config as config_lib
from tfhp.config import slurm
from tfhp.launcher import plan

# Three tasks of one step on two nodes, as `srun -n 3` on node[1-2] spreads them: 2 and 1.
STEP = {'SLURM_STEP_NUM_TASKS': '3', 'SLURM_STEP_NODELIST': 'node[1-2]',
        'SLURM_STEP_TASKS_PER_NODE': '2,1'}


@pytest.fixture(name='scontrol')
def _scontrol(tmp_path, monkeypatch):
    """A fake scontrol first on PATH; returns write(stdout, status=0, stderr='', sleep_s=0),
    which sets what it does next, and calls(), the argument lines it was run with."""
    script, calls = tmp_path / 'scontrol', tmp_path / 'scontrol.calls'

    def write(stdout, status=0, stderr='', sleep_s=0):
        # exec: the timeout kills the sleep itself, leaving no process behind.
        hang = 'exec sleep %g\n' % sleep_s if sleep_s else ''
        script.write_text('#!/bin/sh\necho "$@" >> %s\n%sprintf "%%s" "%s"\n'
                          'printf "%%s" "%s" >&2\nexit %d\n' % (calls, hang, stdout, stderr,
                                                                  status))
        script.chmod(0o755)

    write('node1\nnode2\n')
    monkeypatch.setenv('PATH', '%s%s%s' % (tmp_path, os.pathsep, os.environ['PATH']))
    write.calls = lambda: calls.read_text().splitlines() if calls.exists() else []
    return write


@pytest.mark.parametrize('text, counts', [
    ('2(x3),1', [2, 2, 2, 1]), ('4', [4]), ('1,3(x2)', [1, 3, 3]), ('16(x1)', [16])])
def test_tasks_per_node_is_expanded(text, counts):
    assert slurm.tasks_per_node(text) == counts


@pytest.mark.parametrize('text', ['2(x),1', 'x2', '2,,1', '2(3)'])
def test_a_malformed_tasks_per_node_is_refused_naming_the_variable(text):
    with pytest.raises(config_lib.ConfigError, match="Slurm: SLURM_TASKS_PER_NODE='"):
        slurm.tasks_per_node(text, 'SLURM_TASKS_PER_NODE')


def test_a_node_list_with_ranges_is_expanded_by_scontrol(scontrol):
    assert slurm.hostnames('node[1-2]') == ['node1', 'node2']
    assert scontrol.calls() == ['show hostnames node[1-2]']
    # A plain list is the host names already: no scontrol asked.
    assert slurm.hostnames('a,b') == ['a', 'b'] and len(scontrol.calls()) == 1


def test_a_failing_missing_or_silent_scontrol_is_refused(scontrol, monkeypatch):
    scontrol('', status=1, stderr='scontrol: error: bad list')
    with pytest.raises(config_lib.ConfigError, match=r'scontrol show hostnames n\[1\]` failed '
                       r'\(exit 1\): scontrol: error: bad list'):
        slurm.hostnames('n[1]')
    scontrol('')
    with pytest.raises(config_lib.ConfigError, match=r'failed \(exit 0\): no output'):
        slurm.hostnames('n[1]')
    scontrol('n1', sleep_s=10)
    monkeypatch.setattr(slurm, 'SCONTROL_TIMEOUT_S', 0.3)
    with pytest.raises(config_lib.ConfigError, match='did not answer within 0.3 s'):
        slurm.hostnames('n[1]')
    monkeypatch.setenv('PATH', '/nonexistent')
    with pytest.raises(config_lib.ConfigError, match="SLURM_STEP_NODELIST='n.1.' needs "
                       '`scontrol show hostnames`.*not on PATH'):
        slurm.hostnames('n[1]')


@pytest.mark.parametrize('rank, job, index', [(0, 'ps', 0), (1, 'worker', 0), (2, 'worker', 1)])
def test_ranks_become_ps_tasks_then_workers_on_ports_by_local_rank(scontrol, rank, job, index):
    fields = slurm.cluster_fields(dict(STEP, SLURM_PROCID=str(rank)), num_ps=1, port_base=8888)
    # node1 holds ranks 0 and 1 (ports 8888, 8889), node2 rank 2; worker 0 (rank 1): the chief.
    assert fields == {'job_name': job, 'task_index': index, 'ps_hosts': ('node1:8888',),
                      'worker_hosts': ('node1:8889', 'node2:8888'), 'controller_host': ''}


def test_the_steps_variables_come_before_the_jobs(scontrol):
    # The job spans 4 nodes and 8 tasks; this step runs 3 of them on 2.
    environ = dict(STEP, SLURM_PROCID='2', SLURM_NTASKS='8', SLURM_JOB_NODELIST='node[1-4]',
                   SLURM_TASKS_PER_NODE='2(x4)')
    assert slurm.cluster_fields(environ, 0, 2222)['worker_hosts'] == (
        'node1:2222', 'node1:2223', 'node2:2222')
    job_only = {'SLURM_PROCID': '0', 'SLURM_NTASKS': '2', 'SLURM_JOB_NODELIST': 'a,b',
                'SLURM_TASKS_PER_NODE': '1(x2)'}
    assert slurm.cluster_fields(job_only, 0, 2222)['worker_hosts'] == ('a:2222', 'b:2222')


@pytest.mark.parametrize('changes, num_ps, message', [
    ({'SLURM_PROCID': None}, 1, 'SLURM_PROCID is not set; is this task started by srun'),
    ({'SLURM_STEP_NODELIST': None}, 1, 'SLURM_STEP_NODELIST or SLURM_JOB_NODELIST is not set'),
    ({'SLURM_PROCID': 'zero'}, 1, "SLURM_PROCID='zero' is not a number"),
    ({'SLURM_PROCID': '3'}, 1,
     'SLURM_PROCID=3 is outside the 3 task.s. of SLURM_STEP_NUM_TASKS'),
    ({'SLURM_STEP_TASKS_PER_NODE': '3'}, 1,
     "SLURM_STEP_TASKS_PER_NODE='3' gives 1 node.s. but SLURM_STEP_NODELIST='node.1-2.' "
     'names 2'),
    ({'SLURM_STEP_TASKS_PER_NODE': '2(x2)'}, 1,
     "SLURM_STEP_TASKS_PER_NODE='2.x2.' adds up to 4 task.s. but SLURM_STEP_NUM_TASKS=3"),
    ({}, 3, '--slurm_num_ps=3 must be 0 to 2: a worker among the SLURM_STEP_NUM_TASKS=3 task'),
    ({}, -1, '--slurm_num_ps=-1 must be 0 to 2'),
    # Cyclic distribution puts rank 1 on node2 as its first task: not where block order says.
    ({'SLURM_LOCALID': '0'}, 1, 'SLURM_LOCALID=0, but rank 1 is local task 1 of node1 .*'
     'srun --distribution=block'),
])
def test_inconsistent_slurm_variables_are_refused_naming_them(scontrol, changes, num_ps,
                                                              message):
    environ = dict(STEP, SLURM_PROCID='1')
    environ = {k: v for k, v in dict(environ, **changes).items() if v is not None}
    with pytest.raises(config_lib.ConfigError, match='^Slurm: ' + message):
        slurm.cluster_fields(environ, num_ps, 8888)


def test_ports_past_65535_are_refused(scontrol):
    with pytest.raises(config_lib.ConfigError, match='--slurm_port_base=65535: ports '
                       '65535-65536 .2 task.s. on a node. must lie in 1-65535'):
        slurm.cluster_fields(dict(STEP, SLURM_PROCID='0'), 1, 65535)


def _config(argv, environ):
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp'] + argv)
    try:
        return cli.config_from_flags(cli.FLAGS, environ)
    finally:
        cli.FLAGS.unparse_flags()


def test_the_slurm_resolver_makes_the_cluster_config(scontrol):
    cluster = _config(['--cluster_resolver=slurm', '--slurm_num_ps=1', '--slurm_port_base=7000',
                       '--replicas_to_aggregate=1'], dict(STEP, SLURM_PROCID='1')).cluster
    assert cluster == config_lib.ClusterConfig(
        job_name='worker', task_index=0, ps_hosts=('node1:7000',),
        worker_hosts=('node1:7001', 'node2:7000'), replicas_to_aggregate=1)
    # auto picks no Slurm: a one-task step (a batch script's process) runs one process.
    one = {'SLURM_PROCID': '0', 'SLURM_NTASKS': '1'}
    assert not _config([], one).cluster.enabled


@pytest.mark.parametrize('argv, environ, message', [
    (['--cluster_resolver=slurm', '--job_name=worker'], STEP,
     '--cluster_resolver=slurm reads this task from the environment; drop --job_name'),
    (['--cluster_resolver=tf_config', '--ps_hosts=h:1'], {'TF_CONFIG': '{}'},
     'drop --ps_hosts'),
    (['--slurm_num_ps=2'], {}, '--slurm_num_ps applies to --cluster_resolver=slurm only'),
    (['--cluster_resolver=flags', '--slurm_port_base=1'], {},
     '--slurm_port_base applies to --cluster_resolver=slurm only'),
    (['--cluster_resolver=tf_config'], {}, '--cluster_resolver=tf_config needs the TF_CONFIG'),
    ([], dict(STEP, SLURM_PROCID='0'), 'srun started 3 tasks of this command: '
     '--cluster_resolver=slurm makes them one job, --cluster_resolver=flags runs each alone'),
])
def test_ambiguous_cluster_sources_are_refused(argv, environ, message):
    with pytest.raises(config_lib.ConfigError, match=message):
        _config(argv, environ)


def test_cluster_flags_still_win_over_tf_config_and_slurm():
    cluster = _config(['--job_name=ps', '--ps_hosts=h:1', '--worker_hosts=h:2'],
                      dict(STEP, SLURM_PROCID='1', TF_CONFIG='not even JSON')).cluster
    assert (cluster.job_name, cluster.ps_hosts) == ('ps', ('h:1',))
    alone = _config(['--cluster_resolver=flags'], dict(STEP, SLURM_PROCID='1'))
    assert not alone.cluster.enabled


def _srun_task(rank, port_base, *args):
    """`python -m tfhp` as srun would start rank `rank` of STEP, its nodes both this machine."""
    environ = dict(os.environ, SLURM_PROCID=str(rank), SLURM_STEP_NODELIST='local[1-2]',
                   SLURM_STEP_NUM_TASKS='3', SLURM_STEP_TASKS_PER_NODE='2,1')
    return subprocess.Popen(
        [sys.executable, '-m', 'tfhp', '--cluster_resolver=slurm', '--slurm_num_ps=1',
         '--slurm_port_base=%d' % port_base] + jobs.SMALL + list(args),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=jobs.ROOT,
        env=environ, start_new_session=True)


def test_a_task_started_as_srun_does_serves_at_its_slurm_address(scontrol):
    scontrol('localhost\n127.0.0.1\n')
    port = plan.free_ports(1)[0]
    ps = _srun_task(0, port)
    try:
        lines = []
        for line in ps.stdout:
            lines.append(line)
            if 'serving until' in line or len(lines) > 200:
                break
        assert 'ps task 0 at localhost:%d serving until 2 task(s) are done' % port in (
            ''.join(lines)), ''.join(lines)[-2000:]
    finally:
        os.killpg(ps.pid, signal.SIGKILL)
        ps.communicate(timeout=30)
    assert scontrol.calls() == ['show hostnames local[1-2]']


def test_a_task_with_bad_slurm_variables_exits_2_naming_them(scontrol):
    proc = _srun_task(1, 8888, '--slurm_num_ps=3')  # a repeated flag: the last one counts
    output = proc.communicate(timeout=60)[0]
    assert proc.returncode == 2, output[-2000:]
    assert output.strip().splitlines()[-1] == (
        'tfhp: error: Slurm: --slurm_num_ps=3 must be 0 to 2: a worker among the '
        'SLURM_STEP_NUM_TASKS=3 task(s)')
    assert 'Traceback' not in output

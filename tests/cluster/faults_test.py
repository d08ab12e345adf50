"""Faults injected on loopback: every failure ends in its bound with its cause named, and a stop
loses no work.

Tasks are started by hand (the documented multi-machine mode), each its own process group, so a
test can kill, stop or restart any of them; every test asserts the exit statuses, that every
process ended by itself within its stated bound, and that the message names the peer. Bounds
here: --peer_timeout_s=5, --step_timeout_s=10.
"""
import json
import os
import signal
import subprocess
import sys
import time

import pytest

from tests import testing
from tests.cluster import jobs
from tests.pipelines import shapes
from tfhp.cluster import task as task_lib
from tfhp.launcher import plan
from tfhp.data import info as info_lib

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
PEER_S, STEP_S = 5, 10
BOUNDS = ['--peer_timeout_s=%d' % PEER_S, '--step_timeout_s=%d' % STEP_S]
# Time for a process to notice and exit, beyond the bound it keeps (a loaded 2-core machine).
SLACK_S = 5
LONG = ['--num_batches=100000', '--display_every=10'] + BOUNDS


@pytest.fixture
def hand_started(tmp_path):
    started = []

    def make(num_ps, num_workers, *args):
        job = jobs.hand_started(tmp_path, num_ps, num_workers, args)
        started.append(job)
        return job
    yield make
    for job in started:
        job.end_all()


@pytest.mark.parametrize('sync', [True, False])
def test_a_killed_ps_ends_every_worker_at_once_naming_it(hand_started, sync):
    job = hand_started(1, 2, '--cross_replica_sync=%s' % str(sync).lower(), *LONG).start_all()
    workers = [('worker', 0), ('worker', 1)]
    for worker in workers:
        job.wait_for_line(worker, 'step 10\t', jobs.JOB_TIMEOUT_S)
    job.signal(('ps', 0), signal.SIGKILL)
    ended = job.wait(workers, PEER_S + STEP_S + SLACK_S)
    ps = 'lost ps task 0 at %s' % job.address(('ps', 0))
    for worker in workers:
        status, seconds = ended[worker]
        assert status == 1, (status, job.log(worker)[-2000:])
        assert ps in job.log(worker)
        assert 'Traceback' not in job.log(worker)


@pytest.mark.parametrize('sync', [True, False])
def test_a_stopped_worker_is_named_and_nobody_waits_for_it_beyond_the_bounds(hand_started,
                                                                              sync):
    # SIGSTOP: the worker's port still accepts connections; only its lack of progress shows.
    job = hand_started(1, 2, '--cross_replica_sync=%s' % str(sync).lower(),
                       '--num_batches=600', '--display_every=10', *BOUNDS).start_all()
    victim = ('worker', 1)
    job.wait_for_line(victim, 'step 10\t', jobs.JOB_TIMEOUT_S)
    job.signal(victim, signal.SIGSTOP)
    # The ps gives up on it after --peer_timeout_s; a synchronous chief's step cannot finish,
    # so it ends at --step_timeout_s; an asynchronous chief trains on and ends cleanly.
    ended = job.wait([('ps', 0), ('worker', 0)], STEP_S + PEER_S + 30)
    job.signal(victim, signal.SIGKILL)
    named = 'worker task 1 at %s' % job.address(victim)
    assert ended[('ps', 0)][0] == 1 and named in job.log(('ps', 0)), job.log(('ps', 0))[-2000:]
    if sync:
        status, seconds = ended[('worker', 0)]
        assert status == 1 and named in job.log(('worker', 0)), job.log(('worker', 0))[-2000:]
        assert seconds < STEP_S + PEER_S + SLACK_S
    else:
        assert ended[('worker', 0)][0] == 0, job.log(('worker', 0))[-2000:]
        assert job.result(('worker', 0))['num_steps'] == 600


def _checkpoint_step(train_dir):
    return task_lib.checkpoint_step(str(train_dir))


def test_sigterm_to_the_launcher_stops_every_task_and_keeps_the_step_reached(tmp_path):
    train_dir, result = tmp_path / 'train', tmp_path / 'job.jsonl'
    argv = [sys.executable, '-m', 'tfhp.launch', '--num_ps=1', '--num_workers=2',
            '--result_file=%s' % result, '--'] + jobs.SMALL + LONG + [
                '--train_dir=%s' % train_dir]
    out = open(tmp_path / 'launch.log', 'w')
    proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, cwd=jobs.ROOT,
                            start_new_session=True)
    try:
        log = lambda: (tmp_path / 'launch.log').read_text()  # noqa: E731
        deadline = time.monotonic() + jobs.JOB_TIMEOUT_S
        while '[worker 0] step 20\t' not in log():
            assert proc.poll() is None and time.monotonic() < deadline, log()[-3000:]
            time.sleep(0.1)
        pids = [int(line.rsplit(' ', 1)[1]) for line in log().splitlines()
                if line.startswith('[launch] started ')]
        start = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        status = proc.wait(timeout=STEP_S + 2 * PEER_S + SLACK_S)
        seconds = time.monotonic() - start
    finally:
        jobs.end(proc)
    text = log()
    assert status == 128 + signal.SIGTERM, text[-3000:]
    assert 'Traceback' not in text
    assert '[launch] SIGTERM: stopped ps 0 (stopped by SIGTERM (exit status 143)), worker 0' in (
        text), text[-2000:]
    assert len(pids) == 3 and not any(os.path.exists('/proc/%d' % pid) for pid in pids)
    assert seconds < STEP_S + 2 * PEER_S
    # The chief checkpointed the global step the job reached (a common one for sync workers).
    summary = json.loads(result.read_text().splitlines()[-1])
    assert summary['status'] == 143
    reached = {t['task']: t['global_step'] for t in summary['tasks']}
    assert reached['worker 0'] == reached['worker 1'] == _checkpoint_step(train_dir) > 20


@pytest.mark.parametrize('update', ['parameter_server', 'collective_all_reduce'])
def test_sigterm_to_one_worker_stops_the_whole_job_at_a_common_step(hand_started, tmp_path,
                                                                    update):
    # With ps tasks the stop goes through ps 0; all-reduce workers all-reduce theirs each step.
    train_dir = tmp_path / 'train'
    job = hand_started(int(update == 'parameter_server'), 2, '--train_dir=%s' % train_dir,
                       '--variable_update=' + update, *LONG).start_all()
    job.wait_for_line(('worker', 1), 'step 20\t', jobs.JOB_TIMEOUT_S)
    job.signal(('worker', 1), signal.SIGTERM)
    ended = job.wait(list(job.commands), STEP_S + 2 * PEER_S + SLACK_S)
    assert ended[('worker', 1)][0] == 128 + signal.SIGTERM, job.log(('worker', 1))[-2000:]
    assert {status for task, (status, _) in ended.items() if task != ('worker', 1)} == {0}
    steps = [job.result(w)['global_step'] for w in (('worker', 0), ('worker', 1))]
    assert steps[0] == steps[1] == _checkpoint_step(train_dir)
    assert 'asked to stop (signal 15)' in job.log(('worker', 0))


@pytest.mark.parametrize('sync', [True, False])
def test_a_killed_worker_started_again_rejoins_the_job(hand_started, sync):
    # 100 steps (not more): the victim is killed at step 10, and a synchronous job's other
    # steps wait for it to rejoin.
    job = hand_started(1, 2, '--cross_replica_sync=%s' % str(sync).lower(),
                       '--num_batches=100', '--display_every=10', '--peer_timeout_s=30',
                       '--step_timeout_s=60').start_all()
    victim = ('worker', 1)
    job.wait_for_line(victim, 'step 10\t', jobs.JOB_TIMEOUT_S)
    job.signal(victim, signal.SIGKILL)
    job.procs[victim].wait()
    job.start(victim)  # alone, with the same flags
    ended = job.wait(list(job.commands), jobs.JOB_TIMEOUT_S)
    assert {status for status, _ in ended.values()} == {0}, {
        t: job.log(t)[-1500:] for t in ended}
    rejoined = job.result(victim)
    assert rejoined['num_steps'] > 0 and rejoined['start_global_step'] > 0
    if sync:
        # One end step for the whole job: the restarted worker ended with the chief.
        assert rejoined['global_step'] == job.result(('worker', 0))['global_step'] == 2 + 100


@pytest.mark.parametrize('changed, named', [
    ('worker_hosts', '--worker_hosts: 3'),
    ('batch_size', '--batch_size: 4 there, 2 here'),
])
def test_tasks_started_with_different_settings_are_refused(hand_started, changed, named):
    # Longer bounds than the other tests: this one is about what is named, and a task slow to
    # start on a loaded machine must not be taken for a missing one.
    job = hand_started(1, 2, '--num_batches=100000', '--peer_timeout_s=60',
                       '--step_timeout_s=60')
    if changed == 'worker_hosts':
        # Worker 1 is told of a third worker the others do not know.
        argv = [a + ',127.0.0.1:%d' % plan.free_ports(1)[0]
                if a.startswith('--worker_hosts=') else a for a in job.commands[('worker', 1)]]
    else:
        argv = job.commands[('worker', 1)] + ['--batch_size=4']
    job.start(('ps', 0))
    job.start(('worker', 0))
    job.start(('worker', 1), argv)
    ended = job.wait(list(job.commands), jobs.JOB_TIMEOUT_S)
    # Both workers see the disagreement and exit 2 with one line naming it.
    for worker in (('worker', 0), ('worker', 1)):
        assert ended[worker][0] == 2, (ended, job.log(worker)[-2000:])
        assert 'disagrees with this task' in job.log(worker) and named.split(':')[0] in (
            job.log(worker))
        assert 'Traceback' not in job.log(worker)
    assert named in job.log(('worker', 0)) or named in job.log(('worker', 1))
    assert ended[('ps', 0)][0] is not None  # it ended by itself


@pytest.mark.parametrize('tf_config, message', [
    ({'task': {'type': 'worker', 'index': -1}}, 'TF_CONFIG: task index -1'),
    ({'task': {'type': 'worker', 'index': 2}}, 'TF_CONFIG: task index 2'),
])
def test_tf_config_with_a_bad_task_index_is_refused(tf_config, message):
    ports = plan.free_ports(3)
    spec = dict(tf_config, cluster={'ps': ['127.0.0.1:%d' % ports[0]],
                                    'worker': ['127.0.0.1:%d' % p for p in ports[1:]]})
    proc = subprocess.run([sys.executable, '-m', 'tfhp'] + jobs.SMALL, capture_output=True,
                          text=True, cwd=jobs.ROOT, timeout=60,
                          env=dict(os.environ, TF_CONFIG=json.dumps(spec)))
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr[-2000:]
    assert 'Traceback' not in proc.stderr


def test_a_repeated_task_index_is_refused_naming_the_address(hand_started, tmp_path):
    # The ps waits --peer_timeout_s for its worker, which is never started: long enough here.
    job = hand_started(1, 1, '--peer_timeout_s=120')
    job.start(('ps', 0))
    job.wait_for_line(('ps', 0), 'serving until', jobs.JOB_TIMEOUT_S)
    # A fork of the suite's forkserver, as the ps is: no import of its own.
    status, stdout, stderr, _ = testing.Started({'twin': job.commands[('ps', 0)]},
                                                tmp_path, fork=True).result('twin', 60)
    output = stdout + stderr  # a fork's stderr is in its stdout
    assert status == 2, output[-2000:]
    assert 'ps task 0 cannot listen on %s' % job.address(('ps', 0)) in output
    assert 'same --task_index' in output


@pytest.mark.parametrize('use_datasets', [False, True])
def test_a_worker_names_the_corrupt_record_it_failed_on(hand_started, tmp_path, use_datasets):
    data_dir = tmp_path / 'data'
    data_dir.mkdir()
    shapes.make_corrupt(str(data_dir), subset='train')
    info_lib.write(str(data_dir), info_lib.DataSetInfo('corrupt', 4, {'train': 11}))
    job = hand_started(1, 1, '--data_dir=%s' % data_dir, '--image_size=16', '--batch_size=11',
                       '--use_datasets=%s' % str(use_datasets).lower(), *LONG).start_all()
    ended = job.wait(list(job.commands), STEP_S + 2 * PEER_S + 30)
    worker = job.log(('worker', 0))
    assert ended[('worker', 0)][0] == 2, worker[-2000:]
    assert '--data_dir: %s/train-00000-of-00001 record 2: not a tf.train.Example' % data_dir in (
        worker)
    assert 'Traceback' not in worker
    assert ended[('ps', 0)][0] is not None

"""Whole jobs: real processes on loopback ports, started by the launcher, every one bounded.

Each job runs the trivial model at 8x8 with 10 classes, so a step costs milliseconds and a job
is mostly TensorFlow's import in each process. Timing assertions are ratios within a test.
"""
import subprocess
import sys
import time

import pytest

from tests import testing
from tests.cluster import jobs
from tfhp.cluster import task as task_lib
from tfhp.launcher import plan

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
_launch = jobs.launch_job


def _clean(status, summary, output):
    assert status == 0, output[-3000:]
    # Every task, the ps tasks included, ended by itself with status 0.
    assert set(summary['exit_codes'].values()) == {0}, summary['exit_codes']


@pytest.mark.parametrize('num_ps, update, sync, num_devices', [
    (1, 'parameter_server', False, 1),
    (1, 'parameter_server', True, 1),
    (2, 'parameter_server', False, 2),
    (2, 'distributed_replicated', True, 1),
])
def test_training_makes_progress_and_ends_cleanly(tmp_path, num_ps, update, sync, num_devices):
    status, summary, output = _launch(
        tmp_path, num_ps, 2, '--variable_update=' + update, '--num_batches=12',
        '--cross_replica_sync=%s' % str(sync).lower(), '--num_devices=%d' % num_devices)
    _clean(status, summary, output)
    workers = summary['tasks']
    assert [w['task'] for w in workers] == ['worker 0', 'worker 1']
    assert all(w['images_per_sec'] > 0 for w in workers)
    assert summary['cluster_images_per_sec'] > 0
    # Variables are spread over every ps task.
    for worker in workers:
        loads = worker['variable_bytes_by_device']
        assert sorted(loads) == ['/job:ps/task:%d/device:CPU:0' % i for i in range(num_ps)]
    if sync:
        # One global step per synchronous step: warm-up + timed, the same for both workers.
        assert [w['global_step'] for w in workers] == [2 + 12, 2 + 12]
        assert all(w['num_steps'] == 12 for w in workers)
        assert summary['dropped_gradients'] == 0
        # Both read the same variables after the last step (equal copies in replicated mode).
        assert workers[0]['variables_checksum'] == pytest.approx(
            workers[1]['variables_checksum'], rel=1e-6)
        # The non-chief starts within 2 s of the chief's initialisation (or of asking, if it
        # asked later), not after the stock 30 s readiness poll.
        chief, other = workers
        lag = other['session_ready_time'] - max(chief['session_ready_time'],
                                                other['session_start_time'])
        assert lag < 2.0, lag
    else:
        # Each worker takes its own steps; each increments the global step once per step.
        assert all(w['num_steps'] == 12 for w in workers)
        assert summary['global_step'] <= 2 * (2 + 12)
        # The staleness of every timed update, per worker and for the job.
        assert [w['staleness_count'] for w in workers] == [12, 12]
        assert summary['staleness_count'] == 24 == sum(summary['staleness_histogram'])
        assert 0 <= summary['staleness_mean'] <= summary['staleness_max']


def test_collective_all_reduce_keeps_the_workers_equal(tmp_path):
    status, summary, output = _launch(tmp_path, 0, 2, '--variable_update=collective_all_reduce',
                                      '--num_batches=10', '--learning_rate=0.5')
    _clean(status, summary, output)
    chief, other = summary['tasks']
    assert chief['global_step'] == other['global_step'] == 2 + 10
    assert chief['variables_checksum'] == pytest.approx(other['variables_checksum'], rel=1e-6)
    assert chief['variable_bytes_by_device'] == {'/job:worker/task:0/device:CPU:0': 4 * 49355}
    assert other['variable_bytes_by_device'] == {'/job:worker/task:1/device:CPU:0': 4 * 49355}


@pytest.mark.parametrize('sync', [True, False])
def test_in_graph_replication_across_the_cluster(tmp_path, sync):
    status, summary, output = _launch(tmp_path, 1, 2, '--graph_mode=in_graph',
                                      '--num_batches=10',
                                      '--cross_replica_sync=%s' % str(sync).lower())
    _clean(status, summary, output)
    # One client (worker 0) drove both workers' towers; worker 1 and the ps only served.
    (client,) = summary['tasks']
    assert client['task'] == 'worker 0' and client['images_per_sec'] > 0


def test_distributed_all_reduce_with_a_controller(tmp_path):
    """tf_cnn_benchmarks' in-graph all-reduce line: a controller builds a tower on each of 2
    workers (no ps) and all-reduces their gradients with --all_reduce_spec."""
    status, summary, output = _launch(
        tmp_path, 0, 2, '--variable_update=distributed_all_reduce', '--all_reduce_spec=xring',
        '--num_batches=5', launcher_args=['--controller'])
    _clean(status, summary, output)
    (client,) = summary['tasks']
    assert client['task'] == 'controller 0' and client['images_per_sec'] > 0
    assert client['global_step'] == 2 + 5
    assert 'devices: 2' in output


def test_forward_only_across_the_cluster(tmp_path):
    """Inference on 1 ps + 2 workers: the in-graph client runs a forward-only tower on each
    worker against the ps's variables, trains nothing and reports images/sec."""
    status, summary, output = _launch(tmp_path, 1, 2, '--forward_only', '--graph_mode=in_graph',
                                      '--num_batches=5')
    _clean(status, summary, output)
    (client,) = summary['tasks']
    assert client['task'] == 'worker 0' and client['images_per_sec'] > 0
    assert client['num_steps'] == 5 and 'devices: 2' in output
    assert summary['cluster_images_per_sec'] > 0


def test_spare_replica_absorbs_a_straggler(tmp_path):
    """3 workers, one slowed by 200 ms per step: with R=3 every step waits for it (at most 5
    global steps a second); with R=2 the others step on without it, well above that."""
    def rate(replicas, batches):
        status, summary, output = _launch(
            tmp_path, 1, 3, '--num_batches=%d' % batches, '--replicas_to_aggregate=%d' % replicas,
            '--straggler_workers=2', '--straggler_delay_ms=200')
        _clean(status, summary, output)
        return summary

    # With a spare the others run at about 70 steps a second: 60 steps keep them going for
    # most of a second, so a straggler that starts late still meets them (with 20, once under
    # load it started after their last step and dropped nothing).
    spare_slow, full_slow = rate(2, 60), rate(3, 20)
    # Flaky once in a loaded group run, never alone: the messages say which figure fell short.
    rates = {'R=2': spare_slow['global_steps_per_sec'], 'R=3': full_slow['global_steps_per_sec']}
    assert rates['R=3'] <= 5.0, rates
    assert rates['R=2'] >= 2 * rates['R=3'], rates
    # The straggler's late gradients were dropped and counted, with their images, apart for
    # its warm-up and its timed steps (a timed step drops at most its own gradient).
    straggler = spare_slow['tasks'][2]
    assert straggler['dropped_gradients'] + straggler['warmup_dropped_gradients'] >= 1, (
        straggler, rates)
    assert straggler['dropped_gradients'] <= straggler['num_steps']
    assert straggler['warmup_dropped_gradients'] <= straggler['warmup_steps']
    assert straggler['dropped_images'] == 2 * straggler['dropped_gradients']
    assert straggler['warmup_dropped_images'] == 2 * straggler['warmup_dropped_gradients']
    assert full_slow['dropped_gradients'] == full_slow['warmup_dropped_gradients'] == 0


def test_a_killed_job_resumes_from_its_last_checkpoint(tmp_path):
    train_dir = tmp_path / 'train'
    argv = [sys.executable, '-m', 'tfhp.launch', '--num_ps=1', '--num_workers=2',
            '--timeout_s=200', '--'] + jobs.SMALL + [
                '--num_batches=100000', '--train_dir=%s' % train_dir, '--save_model_steps=5']
    with open(tmp_path / 'killed_job.log', 'w') as log:
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=jobs.ROOT,
                                start_new_session=True)
    try:
        deadline = time.monotonic() + jobs.JOB_TIMEOUT_S
        while task_lib.checkpoint_step(str(train_dir)) < 10:
            assert proc.poll() is None and time.monotonic() < deadline, (
                tmp_path / 'killed_job.log').read_text()[-3000:]
            time.sleep(0.2)
    finally:
        jobs.end(proc)  # the whole job, every task at once
    saved = task_lib.checkpoint_step(str(train_dir))
    with open(train_dir / 'checkpoint') as f:
        steps = sorted(int(line.rsplit('-', 1)[1].rstrip('"\n')) for line in f
                       if line.startswith('all_model'))
    # A checkpoint every 5 synchronous steps: a kill loses at most the last 5.
    assert all(b - a == 5 for a, b in zip(steps, steps[1:])), steps
    status, summary, output = _launch(tmp_path, 1, 2, '--num_batches=4',
                                      '--train_dir=%s' % train_dir, '--save_model_steps=5')
    _clean(status, summary, output)
    assert summary['start_global_step'] == saved
    assert summary['global_step'] == saved + 2 + 4


def test_a_dead_ps_address_is_named_within_the_bounded_wait(tmp_path):
    ps, worker = plan.free_ports(2)
    start = time.monotonic()
    # A fork of the suite's forkserver, as a launcher's tasks are: no import of its own.
    status, stdout, stderr, _ = testing.Started({'worker': [
        sys.executable, '-m', 'tfhp', '--job_name=worker', '--task_index=0',
        '--ps_hosts=127.0.0.1:%d' % ps, '--worker_hosts=127.0.0.1:%d' % worker,
        '--peer_timeout_s=1'] + jobs.SMALL}, tmp_path, fork=True).result(
            'worker', jobs.JOB_TIMEOUT_S)
    elapsed = time.monotonic() - start
    output = stdout + stderr  # a fork's stderr is in its stdout
    assert status == 2, output[-3000:]
    assert ('ps task 0 at 127.0.0.1:%d did not answer within 1 s' % ps) in output
    assert 'Traceback' not in output
    # The bound holds: the worker gave up after its 1 s wait, not after TensorFlow's own.
    assert elapsed < jobs.JOB_TIMEOUT_S / 2


def test_an_async_worker_dying_does_not_stop_the_others(tmp_path):
    job = jobs.hand_started(tmp_path, 1, 3, ['--cross_replica_sync=false', '--num_batches=400',
                                             '--peer_timeout_s=6', '--display_every=10'])
    try:
        job.start_all()
        job.wait_for_line(('worker', 2), 'step 10\t', jobs.JOB_TIMEOUT_S)  # training: kill it
        jobs.end(job.procs[('worker', 2)])
        ended = job.wait([('ps', 0), ('worker', 0), ('worker', 1)], jobs.JOB_TIMEOUT_S)
    finally:
        job.end_all()
    assert ended[('worker', 0)][0] == ended[('worker', 1)][0] == 0
    for index in (0, 1):
        assert job.result(('worker', index))['num_steps'] == 400
    # The ps gave up on the dead worker after --peer_timeout_s and ended, naming it.
    assert ended[('ps', 0)][0] == 1
    assert 'lost worker task 2 at %s' % job.address(('worker', 2)) in job.log(('ps', 0))


def test_a_straggler_slow_in_compute_sends_stale_gradients(tmp_path):
    """Async: a worker delayed inside its step (after reading the variables) applies gradients
    older by the updates the other worker makes during the delay; one delayed before its step
    reads fresh variables after sleeping."""
    delay_s = 0.2

    def straggler_staleness(mode):
        job = jobs.hand_started(tmp_path / mode, 1, 2, [
            '--cross_replica_sync=false', '--straggler_workers=1',
            '--straggler_delay_ms=%d' % (delay_s * 1000), '--straggler_mode=' + mode,
            '--num_batches=400'])
        straggler = job.commands[('worker', 1)]
        try:
            job.start(('ps', 0))
            job.start(('worker', 0))
            # The straggler takes few steps, all while the other worker takes its 400.
            job.start(('worker', 1), [a for a in straggler if not a.startswith('--num_batches')]
                      + ['--num_batches=8'])
            ended = job.wait(list(job.commands), jobs.JOB_TIMEOUT_S)
        finally:
            job.end_all()
        assert {status for status, _ in ended.values()} == {0}, job.log(('worker', 1))[-2000:]
        steps_per_s = job.result(('worker', 0))['images_per_sec'] / 2  # SMALL's batch of 2
        return job.result(('worker', 1))['staleness_mean'], steps_per_s

    (tmp_path / 'compute').mkdir()
    (tmp_path / 'before_step').mkdir()
    (compute, rate), (before_step, _) = (straggler_staleness('compute'),
                                         straggler_staleness('before_step'))
    # The delay inside the step adds the other worker's updates in it (rate * delay, a step
    # or more even on loaded cores); half of that leaves room for the rate's drift, which
    # depends on the load (the CI machine's 2 cores run two tests beside this job).
    assert compute - before_step > 0.5 * rate * delay_s > 1, (compute, before_step, rate)

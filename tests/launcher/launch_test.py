"""The launcher's pure parts: task command lines, bounds, statuses, the job's figures, and
what it refuses before starting anything."""
import pytest

from tfhp.launcher import figures
from tfhp.launcher import local_job
from tfhp.launcher import plan
from tfhp.launcher import supervisor


def test_task_commands_give_every_task_its_flags(tmp_path):
    commands = plan.task_commands(2, 3, ['--model=trivial'], str(tmp_path))
    assert list(commands) == [('ps', 0), ('ps', 1), ('worker', 0), ('worker', 1), ('worker', 2)]
    worker = commands[('worker', 2)]
    assert '--model=trivial' in worker and '--job_name=worker' in worker
    assert '--task_index=2' in worker
    assert '--result_file=%s' % (tmp_path / 'worker_2.jsonl') in worker
    assert not any(a.startswith('--result_file') for a in commands[('ps', 0)])
    hosts = [a for a in worker if a.startswith('--worker_hosts=')][0].split('=')[1].split(',')
    ps_hosts = [a for a in worker if a.startswith('--ps_hosts=')][0].split('=')[1].split(',')
    assert len(set(hosts + ps_hosts)) == 5


def test_task_commands_refuse_flags_the_launcher_sets(tmp_path):
    with pytest.raises(ValueError, match='--task_index is set by the launcher'):
        plan.task_commands(1, 2, ['--task_index=1'], str(tmp_path))


def _worker(start, ends, images_per_step, **extra):
    return dict(timed_start_time=start, end_times=ends, images_per_step=images_per_step,
                images_per_sec=images_per_step * len(ends) / (ends[-1] - start),
                num_steps=len(ends), **extra)


def test_the_job_figure_counts_every_timed_image_over_the_union_of_the_windows():
    results = {
        # Two fast workers, 10 steps of 4 images each over (10, 11].
        ('worker', 0): _worker(10.0, [10.1 + 0.1 * i for i in range(10)], 4,
                               first_step_time=9.0, global_steps_per_sec=2.0, global_step=7,
                               start_global_step=2),
        ('worker', 1): _worker(10.0, [10.1 + 0.1 * i for i in range(10)], 4),
        # A straggler: one step over (10.5, 12.0], with 3 of its gradients dropped, 2 of them in
        # its warm-up.
        ('worker', 2): _worker(10.5, [12.0], 4, dropped_gradients=1, dropped_images=4,
                               warmup_dropped_gradients=2, warmup_dropped_images=8),
    }
    summary = figures.cluster_summary(results, {('worker', i): 5.0 + i for i in range(3)})
    # Union of (10, 11], (10, 11], (10.5, 12]: 2 s; images 40 + 40 + 4.
    assert summary['timed_window_s'] == pytest.approx(2.0)
    assert summary['cluster_images_per_sec'] == pytest.approx(84 / 2.0)
    # Applied: the straggler's one timed gradient was dropped.
    assert summary['applied_images_per_sec'] == pytest.approx(80 / 2.0)
    rates = summary['worker_images_per_sec']
    assert rates == pytest.approx({'worker 0': 40.0, 'worker 1': 40.0, 'worker 2': 4 / 1.5})
    assert summary['cluster_images_per_sec'] <= sum(rates.values())
    # Warm-up drops are reported apart from the timed ones.
    assert (summary['dropped_gradients'], summary['warmup_dropped_gradients']) == (1, 2)
    assert summary['tasks'][0]['start_to_first_step_s'] == pytest.approx(4.0)
    assert (summary['global_steps_per_sec'], summary['global_step'],
            summary['start_global_step']) == (2.0, 7, 2)


def test_identical_workers_make_the_sum_of_their_rates():
    ends = [1.0 + 0.25 * i for i in range(1, 9)]
    results = {('worker', i): _worker(1.0, ends, 8) for i in range(3)}
    summary = figures.cluster_summary(results, {t: 0.0 for t in results})
    assert summary['cluster_images_per_sec'] == pytest.approx(
        sum(summary['worker_images_per_sec'].values())) == pytest.approx(3 * 32.0)


def test_union_length_of_overlapping_and_disjoint_windows():
    assert figures.union_length([(0, 2), (1, 3), (5, 6)]) == 4
    assert figures.union_length([(1, 4), (2, 3)]) == 3


def test_staleness_of_every_worker_is_merged():
    histogram = [0] * 17
    a = dict(_worker(0.0, [1.0], 2), staleness_count=3, staleness_sum=3, staleness_max=2,
             stale_gradients_dropped=0, staleness_histogram=[1, 1, 1] + histogram[3:])
    b = dict(_worker(0.0, [1.0], 2), staleness_count=1, staleness_sum=5, staleness_max=5,
             stale_gradients_dropped=1, staleness_histogram=histogram[:5] + [1] + histogram[6:])
    summary = figures.cluster_summary({('worker', 0): a, ('worker', 1): b},
                                     {('worker', 0): 0.0, ('worker', 1): 0.0})
    assert summary['staleness_mean'] == 2.0 and summary['staleness_max'] == 5
    assert summary['staleness_histogram'][:6] == [1, 1, 1, 0, 0, 1]
    assert summary['tasks'][1]['staleness_mean'] == 5.0


def test_one_in_graph_result_is_the_cluster_figure():
    results = {('worker', 0): {'images_per_sec': 123.0, 'num_steps': 4}}
    summary = figures.cluster_summary(results, {('worker', 0): 0.0})
    assert summary['cluster_images_per_sec'] == 123.0


def test_task_bounds_come_from_the_tfhp_flags():
    assert plan.task_bounds(['--peer_timeout_s=7', '--step_timeout_s', '30']) == (7.0, 30.0)
    assert plan.task_bounds([]) == (60.0, 600.0)


def test_exit_statuses_in_words():
    assert supervisor.describe_status(-9) == 'killed by SIGKILL'
    assert supervisor.describe_status(143) == 'stopped by SIGTERM (exit status 143)'
    assert supervisor.describe_status(1) == 'exit status 1'


def test_the_root_cause_is_the_first_task_that_did_not_merely_react():
    # The ps noticed first (exit 1: a lost peer); worker 1 exited 2 (a setting at fault).
    assert supervisor.root_cause([(('ps', 0), 1), (('worker', 1), 2), (('worker', 0), 1)]) == (
        ('worker', 1), 2)
    assert supervisor.root_cause([(('worker', 0), 1), (('worker', 1), -9)]) == (('worker', 1), -9)
    # Only reactions: the first seen.
    assert supervisor.root_cause([(('ps', 0), 1), (('worker', 0), 1)]) == (('ps', 0), 1)


def test_the_startup_breakdown_counts_each_phase_from_the_one_before():
    result = {'startup_times': {'started': 100.5, 'imported': 103.0, 'peers': 104.0,
                                'graph': 106.5},
              'session_ready_time': 107.0, 'first_step_time': 109.0}
    assert figures.startup_breakdown(result, 100.0) == pytest.approx(
        {'import': 3.0, 'peers': 1.0, 'graph': 2.5, 'session': 0.5, 'first_step': 2.0})
    # Phases add up to launch -> first step; a missing mark folds into the next phase.
    del result['startup_times']['peers']
    assert figures.startup_breakdown(result, 100.0) == pytest.approx(
        {'import': 3.0, 'graph': 3.5, 'session': 0.5, 'first_step': 2.0})


def _losses(dropped_received=0, tcp_timeouts=0):
    return {'dropped_sent': 0, 'dropped_received': dropped_received, 'tcp_retransmits': 0,
            'tcp_timeouts': tcp_timeouts}


def test_incast_names_the_port_that_dropped_most_once_timeouts_reach_one_a_step():
    report = {'ps 0': _losses(dropped_received=19091, tcp_timeouts=11),
              'worker 0': _losses(dropped_received=3, tcp_timeouts=14),
              'worker 1': _losses(tcp_timeouts=14)}
    assert figures.incast(report, global_steps=25) == {
        'task': 'ps 0', 'dropped': 19091, 'tcp_timeouts_per_step': 39 / 25}
    assert figures.incast(report, global_steps=40) is None  # fewer than one a step
    assert figures.incast({'ps 0': _losses(tcp_timeouts=50)}, global_steps=25) is None  # no drop
    assert figures.incast(report, global_steps=0) is None


def test_a_flag_is_read_in_either_form_the_last_one_winning():
    args = ['--train_dir=/a', '--num_batches', '20', '--train_dir=/b', '--bare']
    assert plan.flag_value(args, 'train_dir') == '/b'
    assert plan.flag_value(args, 'num_batches') == '20'
    assert plan.flag_value(args, 'bare') == ''
    assert plan.flag_value(args, 'save_model_steps', 5) == 5
    assert plan.flag_value(['--train_dirx=/c'], 'train_dir') is None


@pytest.mark.parametrize('num_ps, rates, message', [
    (1, {}, '--colocate_ps needs --link_bandwidth'),
    (3, {'link_bandwidth': '1gbit'}, '--num_ps=3 is more than --num_workers=2'),
    (1, {'link_bandwidth': '1gbit', 'ps_link_bandwidth': '2gbit'},
     '--ps_link_bandwidth cannot apply'),
])
def test_colocated_ps_tasks_refuse_what_cannot_work_before_starting(num_ps, rates, message):
    with pytest.raises(ValueError, match=message):
        local_job.launch_job(num_ps, 2, ['--model=trivial'], colocate_ps=True, **rates)

"""The launcher's pure parts: task command lines and the cluster figures."""
import pytest

from tfhp import launch


def test_task_commands_give_every_task_its_flags(tmp_path):
    commands = launch.task_commands(2, 3, ['--model=trivial'], str(tmp_path))
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
        launch.task_commands(1, 2, ['--task_index=1'], str(tmp_path))


def _worker(start, ends, images_per_step, **extra):
    return dict(timed_start_time=start, end_times=ends, images_per_step=images_per_step,
                images_per_sec=1.0, num_steps=len(ends), **extra)


def test_cluster_images_per_sec_counts_images_in_the_common_interval():
    results = {
        ('worker', 0): _worker(10.0, [10.5, 11.0, 11.5, 12.0, 12.5], 4,
                               first_step_time=9.0, global_steps_per_sec=2.0, global_step=7,
                               start_global_step=2),
        # Starts later and ends earlier: the common interval is (10.6, 12.1].
        ('worker', 1): _worker(10.6, [10.9, 11.2, 11.5, 11.8, 12.1], 2, dropped_gradients=3,
                               dropped_images=6),
    }
    summary = launch.cluster_summary(results, {('worker', 0): 5.0, ('worker', 1): 5.5})
    # Steps ending in (10.6, 12.1]: worker 0 at 11.0, 11.5, 12.0 (3 x 4 images); worker 1 all
    # five (5 x 2 images): 22 images over 1.5 s.
    assert summary['common_interval_s'] == pytest.approx(1.5)
    assert summary['cluster_images_per_sec'] == pytest.approx(22 / 1.5)
    assert summary['tasks'][0]['start_to_first_step_s'] == pytest.approx(4.0)
    assert summary['dropped_gradients'] == 3 and summary['dropped_images'] == 6
    assert (summary['global_steps_per_sec'], summary['global_step'],
            summary['start_global_step']) == (2.0, 7, 2)


def test_one_in_graph_result_is_the_cluster_figure():
    results = {('worker', 0): {'images_per_sec': 123.0, 'num_steps': 4}}
    summary = launch.cluster_summary(results, {('worker', 0): 0.0})
    assert summary['cluster_images_per_sec'] == 123.0

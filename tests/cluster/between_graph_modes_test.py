"""tf_cnn_benchmarks' between-graph command lines beyond plain training, as whole jobs: staged
variable reads (--staged_vars) and inference (--forward_only), 1 ps + 2 workers each.

Real processes on loopback ports, started by the launcher and bounded (`tests.cluster.jobs`).
"""
import math

import pytest

from tests.cluster import jobs

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def _launch_clean(tmp_path, *args):
    """The job's summary, once it ended with every task's status 0."""
    status, summary, output = jobs.launch_job(tmp_path, 1, 2, *args)
    assert status == 0, output[-3000:]
    assert set(summary['exit_codes'].values()) == {0}, summary['exit_codes']
    return summary, output


@pytest.mark.parametrize('sync', [True, False])
def test_staged_vars_between_graphs_trains_to_its_end(tmp_path, sync):
    summary, _ = _launch_clean(tmp_path, '--variable_update=parameter_server', '--staged_vars',
                               '--num_batches=12', '--learning_rate=0.05',
                               '--cross_replica_sync=%s' % str(sync).lower())
    workers = summary['tasks']
    assert [w['task'] for w in workers] == ['worker 0', 'worker 1']
    assert all(w['num_steps'] == 12 and w['images_per_sec'] > 0 for w in workers)
    # Trained: from about ln(10) (10 classes) down, as the non-staged job does (2.2 -> 1.1 and
    # 0.1 on the two workers' data, measured).
    for w in workers:
        assert math.isfinite(w['last_loss']) and w['last_loss'] < w['first_loss'] < 3.0, w
    if sync:
        # One global step per synchronous step, and one-step-stale reads drop no gradient.
        assert [w['global_step'] for w in workers] == [2 + 12, 2 + 12]
        assert summary['dropped_gradients'] == summary['warmup_dropped_gradients'] == 0
        assert workers[0]['variables_checksum'] == pytest.approx(
            workers[1]['variables_checksum'], rel=1e-6)
    else:
        assert summary['staleness_count'] == 24
        assert summary['global_step'] <= 2 * (2 + 12)


def test_forward_only_between_graphs_times_each_workers_inference(tmp_path):
    """Each worker its own graph: the chief initialises the ps tasks' variables, both time
    --num_batches forward steps on them, and the launcher sums their figures."""
    summary, output = _launch_clean(tmp_path, '--forward_only', '--num_batches=5')
    workers = summary['tasks']
    assert [w['task'] for w in workers] == ['worker 0', 'worker 1']
    for w in workers:
        assert w['num_steps'] == 5 and w['images'] == 10 and w['images_per_sec'] > 0
        assert w['warmup_steps'] == 2 and w['global_step'] == 0  # nothing trained
        assert 'final_loss' not in w
        assert w['variable_bytes_by_device'] == {'/job:ps/task:0/device:CPU:0': 4 * 49355}
    # Both read the chief's weights, not weights of their own.
    assert workers[0]['variables_checksum'] == workers[1]['variables_checksum'] != 0
    assert 0 < summary['cluster_images_per_sec'] <= sum(w['images_per_sec'] for w in workers)
    assert output.count('timed forward steps') == 2


def test_forward_only_between_graphs_restores_the_trained_weights(tmp_path):
    """Inference on what a distributed_replicated job trained: the chief restores its
    checkpoint (the masters' names are parameter_server's), so both workers read its weights."""
    train_dir = str(tmp_path / 'train')
    trained, _ = _launch_clean(tmp_path, '--variable_update=distributed_replicated',
                               '--num_batches=4', '--train_dir=' + train_dir)
    summary, _ = _launch_clean(tmp_path, '--forward_only', '--num_batches=3',
                               '--train_dir=' + train_dir)
    for w in summary['tasks']:
        assert w['global_step'] == 2 + 4 and w['num_steps'] == 3
        assert w['variables_checksum'] == pytest.approx(
            trained['tasks'][0]['variables_checksum'], rel=1e-6)

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

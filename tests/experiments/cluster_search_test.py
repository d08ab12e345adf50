"""The search study at a tiny size: both searches run, rank, and record the ps memory."""
import pytest

from experiments import cluster_search


def test_a_search_without_the_reset_ranks_and_records_the_ps_memory(shapes_dir):
    # The 100 validation images in batches of 10: a client builds ops of its own for each
    # record of an evaluation batch (`tests/cluster/serving_test.py` says what 50 cost).
    args = cluster_search.tfhp_flags(shapes_dir, 'trivial', 16, 16, steps=10, seed=1,
                                     eval_batch_size=10, num_eval_batches=10)
    record = cluster_search.measure(False, ['0.02', '0.2'], args + ['--peer_timeout_s=20'],
                                    repeats=1, timeout_s=200, log=lambda line: None)
    assert record['reset'] is False
    assert [run['error'] for run in record['runs']] == [None, None]
    assert sorted(row['top_1']['n'] for row in record['ranking']) == [1, 1]
    assert len(record['ps_mb_after_client']) == 2
    assert all(m > 0 for m in record['ps_mb_after_client'])
    assert record['ps_exit_codes'] == [0]


def test_the_growth_is_the_least_squares_slope():
    assert cluster_search.growth_mb_per_client([500.0, 505.0, 510.0, 515.0]) == 5.0
    assert cluster_search.growth_mb_per_client([500.0, 501.0, 499.0, 500.0]) == pytest.approx(-0.2)
    assert cluster_search.growth_mb_per_client([500.0]) == 0.0

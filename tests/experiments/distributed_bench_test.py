"""The distributed benchmark runs tiny null-model jobs, repeated, and reports their figures."""
import pytest

from experiments import common
from experiments import distributed_bench


@pytest.mark.cluster
def test_one_null_model_job_reports_steps_per_sec():
    summary = distributed_bench.run_job(1, 1, [
        '--model=null_dense', '--weight_decay=0', '--batch_size=1', '--num_batches=3',
        '--num_warmup_batches=1', '--display_every=1000', '--partition_min_bytes=1048576'])
    assert summary['status'] == 0
    assert summary['global_step'] == 1 + 3
    assert summary['global_steps_per_sec'] > 0
    (worker,) = summary['tasks']
    # The 16 MiB vector is the whole model; on one ps it stays whole.
    assert worker['variable_bytes_by_device'] == {'/job:ps/task:0/device:CPU:0': 4 << 22}


@pytest.mark.cluster
def test_null_rows_repeat_with_their_seeds_and_summarise_the_job_figures():
    rows = distributed_bench.null_rows(['null_scalar'], [1], 1, steps=3, warmup_steps=1)
    assert len(rows) == 2   # sync and async, one worker count
    (record,) = distributed_bench.mark(common.repeat_in_rounds(
        rows[:1], 2, 21, distributed_bench.FIGURES))
    assert record['label'] == 'null_scalar sync' and record['num_workers'] == 1
    assert record['seeds'] == [21, 22] and record['repeats'] == 2
    assert [r['job']['status'] for r in record['runs']] == [0, 0]
    assert '--tf_random_seed=22' in record['runs'][1]['job']['tfhp_args']
    steps = record['global_steps_per_sec']
    assert steps['n'] == 2 and 0 < steps['min'] <= steps['median'] <= steps['max']
    assert record['dropped_gradients']['values'] == [0, 0]

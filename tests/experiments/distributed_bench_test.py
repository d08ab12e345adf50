"""The distributed benchmark runs one tiny null-model job and reports its figures."""
import pytest

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

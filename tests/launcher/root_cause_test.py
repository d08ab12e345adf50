"""A failed job's root cause: the task that failed on its own, not the first that reacted."""
import pytest

from tests.cluster import jobs
from tests.pipelines import shapes
from tfhp.data import info as info_lib


@pytest.mark.cluster
@pytest.mark.slow
def test_a_corrupt_record_is_named_as_the_root_cause_not_the_ps_that_noticed(tmp_path):
    data_dir = tmp_path / 'data'
    data_dir.mkdir()
    shapes.make_corrupt(str(data_dir), subset='train')
    info_lib.write(str(data_dir), info_lib.DataSetInfo('corrupt', 4, {'train': 11}))
    status, summary, output = jobs.launch_job(
        tmp_path, 1, 1, '--data_dir=%s' % data_dir, '--image_size=16', '--batch_size=11',
        '--num_batches=100', '--peer_timeout_s=5', '--step_timeout_s=10')
    assert status == 1, output[-3000:]
    cause = summary['root_cause']
    assert (cause['task'], cause['status']) == ('worker 0', 2), output[-3000:]
    assert 'train-00000-of-00001 record 2: not a tf.train.Example' in cause['last_line']
    assert '[launch] root cause: worker 0 (exit status 2): ' in output

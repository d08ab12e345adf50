"""The pipelined push-pull (--ps_pipeline_bytes): each variable, or chunk of a large one, is
pushed, applied and pulled back on its own, in the step or (--ps_background_pulls) in a thread of
the worker's, and (--ps_push_priority) pushed from threads of its own, or (--ps_pull_clock)
each push paced by a pull; the training is the same as the whole step's."""
import pytest

from tests.cluster import jobs

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
# null_dense: one 16 MiB vector, zero-initialised, so that its chunks start as the whole does.
NULL_DENSE = ['--model=null_dense', '--weight_decay=0', '--variable_update=distributed_replicated',
              '--num_batches=4', '--num_warmup_batches=1', '--display_every=100']


def _run(tmp_path, *args):
    status, summary, output = jobs.launch_job(tmp_path, 2, 2, *(NULL_DENSE + list(args)))
    assert status == 0 and set(summary['exit_codes'].values()) == {0}, output[-3000:]
    return summary


def test_every_pipelined_transfer_trains_as_the_whole_step_does(tmp_path):
    whole = _run(tmp_path)
    # 4 MiB chunks: the vector travels as 4 masters spread over the 2 ps tasks.
    pipelined = _run(tmp_path, '--ps_pipeline_bytes=%d' % (4 << 20))
    background = _run(tmp_path, '--ps_pipeline_bytes=%d' % (4 << 20), '--ps_background_pulls')
    # Priority pushes, two senders (an 8 MiB window) to each ps task.
    priority = _run(tmp_path, '--ps_pipeline_bytes=%d' % (4 << 20), '--ps_background_pulls',
                    '--ps_push_priority', '--ps_pipeline_window=%d' % (8 << 20))
    # Pull-clocked, 2 MiB chunks: four on each ps task's chain, so two wait for pulls.
    clocked = _run(tmp_path, '--ps_pipeline_bytes=%d' % (2 << 20), '--ps_pull_clock')
    runs = (whole, pipelined, background, priority, clocked)
    for summary in runs:
        assert [t['global_step'] for t in summary['tasks']] == [5, 5]
        assert summary['dropped_gradients'] == 0
    sums = [t['variables_checksum'] for s in runs for t in s['tasks']]
    assert sums[0] != 0 and max(sums) - min(sums) <= 1e-5 * abs(sums[0])
    loads = pipelined['tasks'][0]['variable_bytes_by_device']
    assert sorted(loads.values()) == [8 << 20, 8 << 20]  # two chunks on each ps task

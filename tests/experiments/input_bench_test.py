"""The input benchmark runs at a tiny size and reports consistent figures."""
import pytest

from experiments import input_bench


def test_input_bench_measures_the_pipelining_study(tmp_path):
    options = input_bench.Options(num_batches=1, num_warmup_batches=0, repeats=1,
                                  num_examples_scale=0.01, data_root=str(tmp_path),
                                  timeout_s=300)
    records = input_bench.pipelining(options, 'pipelining')
    labels = [r['label'] for r in records]
    assert labels == ['compute (1 thread)', 'RecordInput input (1 thread)',
                      'RecordInput sequential (2+0 threads)',
                      'RecordInput pipelined (2+0 threads)', 'tf.data input (1 thread)',
                      'tf.data sequential (1+1 threads)', 'tf.data pipelined (1+1 threads)']
    compute, one_core, sequential, pipelined = records[:4]
    assert pipelined['ratio_to_max_input_compute'] == pytest.approx(
        pipelined['step_time_ms'] / max(compute['step_time_ms'], one_core['step_time_ms']))
    assert pipelined['data']['staged_input'] and not sequential['data']['staged_input']
    assert one_core['data']['input_only'] and compute['data']['data_dir'] is None
    assert records[-1]['data']['datasets_num_private_threads'] == 1
    assert [r['threads'] for r in records[:4]] == [[1, 1], [1, 1], [2, 1], [2, 1]]
    assert all(r['images_per_sec'] > 0 and len(r['step_time_ms_runs']) == 1 for r in records)


def test_a_failed_run_names_its_measurement(tmp_path):
    options = input_bench.Options(num_batches=1, num_warmup_batches=0, repeats=1,
                                  num_examples_scale=0.01, data_root=str(tmp_path),
                                  timeout_s=300)
    bad = input_bench.Measurement('bad threads', 'pipelining', False, (-1, 1), {})
    with pytest.raises(RuntimeError, match=r'bad threads \(pipelining\): refused'):
        input_bench.measure_all(options, [bad])

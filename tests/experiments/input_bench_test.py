"""The input benchmark runs at a tiny size and reports consistent figures."""
import pytest

from experiments import input_bench


def test_input_bench_measures_the_pipelining_study(tmp_path):
    # RecordInput's rows only (the tf.data rows are the same code with other data flags).
    options = input_bench.Options(num_batches=1, num_warmup_batches=0, repeats=1,
                                  num_examples_scale=0.01, data_root=str(tmp_path),
                                  timeout_s=300)
    records = input_bench.pipelining(options, 'pipelining', ['RecordInput'])
    labels = [r['label'] for r in records]
    assert labels == ['compute (1 thread)', 'RecordInput input (1 thread)',
                      'RecordInput sequential (2+0 threads)',
                      'RecordInput pipelined (2+0 threads)']
    compute, one_core, sequential, pipelined = records
    median = {r['label']: r['step_time_ms']['median'] for r in records}
    assert pipelined['ratio_to_max_input_compute']['median'] == pytest.approx(
        median[pipelined['label']] / max(median[compute['label']], median[one_core['label']]))
    assert pipelined['data']['staged_input'] and not sequential['data']['staged_input']
    assert one_core['data']['input_only'] and compute['data']['data_dir'] is None
    assert [r['threads'] for r in records] == [[1, 1], [1, 1], [2, 1], [2, 1]]
    assert all(r['images_per_sec']['min'] > 0 and r['step_time_ms']['n'] == 1 for r in records)
    assert all(r['seeds'] == [1234] for r in records)
    assert pipelined['vs_reference']['step_time_ms'] == 'within noise'   # one repeat: no mark


def test_ratios_are_taken_within_each_round():
    def run(step_ms):
        return {'step_time_ms': step_ms}
    # Rows: compute, then per pipeline input, sequential, pipelined; rounds: 2.
    runs = [[run(40.0), run(30.0)],
            [run(20.0), run(40.0)], [run(50.0), run(60.0)], [run(44.0), run(42.0)],
            [run(30.0), run(30.0)], [run(60.0), run(60.0)], [run(45.0), run(45.0)]]
    input_bench._pipelining_ratios(runs)  # pylint: disable=protected-access
    # Round 0: max(20, 40) = 40, sum 60; round 1: max(40, 30) = 40, sum 70.
    assert [r['ratio_to_max_input_compute'] for r in runs[3]] == [44.0 / 40, 42.0 / 40]
    assert [r['ratio_to_sum_input_compute'] for r in runs[2]] == [50.0 / 60, 60.0 / 70]
    assert [r['ratio_to_max_input_compute'] for r in runs[6]] == [45.0 / 40, 45.0 / 30]


def test_a_failed_run_names_its_measurement(tmp_path):
    options = input_bench.Options(num_batches=1, num_warmup_batches=0, repeats=1,
                                  num_examples_scale=0.01, data_root=str(tmp_path),
                                  timeout_s=300)
    bad = input_bench.Measurement('bad threads', 'pipelining', False, (-1, 1), {})
    with pytest.raises(RuntimeError, match=r'bad threads \(pipelining\): refused'):
        input_bench.measure_all(options, [bad])

"""The input benchmark runs at a tiny size and reports consistent figures."""
from experiments import input_bench


def test_input_bench_measures_both_studies(tmp_path):
    options = input_bench.Options(num_batches=1, num_warmup_batches=0,
                                  num_examples_scale=0.01, data_root=str(tmp_path))
    records = input_bench.pipelining(options, 'pipelining')
    labels = [r['label'] for r in records]
    assert labels == ['compute (1 thread)', 'RecordInput input (1 thread)',
                      'RecordInput sequential (2+0 threads)',
                      'RecordInput pipelined (2+0 threads)', 'tf.data input (1 thread)',
                      'tf.data sequential (1+1 threads)', 'tf.data pipelined (1+1 threads)']
    compute, one_core, _, pipelined = records[:4]
    assert pipelined['ratio_to_max_input_compute'] == (
        pipelined['step_time_ms'] / max(compute['step_time_ms'], one_core['step_time_ms']))
    assert pipelined['data']['staged_input'] and not records[2]['data']['staged_input']
    assert all(r['images_per_sec'] > 0 for r in records)

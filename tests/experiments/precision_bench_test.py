"""The precision and XLA study at a tiny size: a figure or tfhp's reason per setting."""
from experiments import precision_bench


def test_float16_runs_are_capped_and_every_setting_has_a_figure_or_a_reason():
    args = precision_bench.arguments('lenet', 'float16', batch_size=2, num_batches=30,
                                     slow_num_batches=3, num_warmup_batches=5)
    assert args[:3] == ['--model=lenet', '--image_size=28', '--use_fp16']
    assert '--num_batches=3' in args and '--num_warmup_batches=1' in args
    records = precision_bench.measure(['trivial'], ['float32', 'xla_compile', 'bfloat16'], 1,
                                      batch_size=2, num_batches=2, slow_num_batches=2,
                                      num_warmup_batches=1)
    assert [r['setting'] for r in records] == ['float32', 'xla_compile', 'bfloat16']
    assert records[0]['speedup'] == 1.0
    for record in records:
        assert record.get('images_per_sec', 0) > 0 or record['error'].startswith('refused: ')

"""The ablations: their configurations, one measured pair, and the backup-worker gain."""
import pytest

from experiments import ablations


def test_every_ablation_changes_one_setting():
    for name in ablations.ABLATIONS:
        configurations = ablations.configurations(name, '/data', 2, 200.0)
        assert len(configurations) >= 2
        assert len({c.label for c in configurations}) == len(configurations)
    backup = ablations.configurations('backup_workers', '/data', 2, 150.0)
    assert [c.num_workers for c in backup] == [3, 3, 3]
    assert '--straggler_delay_ms=150' in backup[2].args
    assert backup[2].args[-1] == '--replicas_to_aggregate=2'
    assert [c.num_ps for c in ablations.configurations('ps_count', '/data', 2, 0)] == [1, 2, 4]
    with pytest.raises(ValueError, match='unknown ablation'):
        ablations.configurations('colour', '/data', 2, 0)


def test_data_format_runs_nhwc_and_names_why_nchw_does_not():
    run_args = ['--num_batches=2', '--num_warmup_batches=1', '--image_size=16',
                '--batch_size=4']
    nhwc, nchw = [ablations.measure('data_format', c, run_args, 300)
                  for c in ablations.configurations('data_format', '/data', 2, 0)]
    assert nhwc['images_per_sec'] > 0 and 'error' not in nhwc
    # This CPU build refuses NCHW; where it runs, it reports a figure instead.
    assert nchw.get('images_per_sec', 0) > 0 or nchw['error'].startswith(
        'refused: --data_format=NCHW')


def test_gains_are_the_reference_step_time_over_each():
    records = [{'ablation': 'backup_workers', 'setting': s, 'step_time_ms': t}
               for s, t in (('no straggler, 3 of 3', 50.0), ('straggler, 3 of 3', 250.0),
                            ('straggler, 2 of 3 (1 backup)', 100.0))]
    records += [{'ablation': 'pipelining', 'setting': s, 'step_time_ms': t}
                for s, t in (('staged input', 40.0), ('sequential input', 50.0))]
    records.append({'ablation': 'batchnorm', 'setting': 'fused', 'step_time_ms': 9.0})
    gains = [r.get('step_time_gain') for r in ablations.add_gains(records)]
    assert gains == [5.0, 1.0, 2.5, 1.25, 1.0, None]

"""The ablations: their configurations, one measured pair, and the backup-worker gain."""
import functools

import pytest

from experiments import ablations
from experiments import common
from experiments import stats


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


def test_data_format_repeats_nhwc_and_names_why_nchw_does_not():
    run_args = ['--num_batches=2', '--num_warmup_batches=1', '--image_size=16',
                '--batch_size=4']
    measures = [ablations.once_refused(functools.partial(ablations.measure, 'data_format', c,
                                                         run_args, 300))
                for c in ablations.configurations('data_format', '/data', 2, 0)]
    nhwc, nchw = common.repeat_in_rounds(measures, 2, 3, ablations.FIGURES)
    assert nhwc['seeds'] == [3, 4] and [r['seed'] for r in nhwc['runs']] == [3, 4]
    assert nhwc['images_per_sec']['n'] == 2 and nhwc['images_per_sec']['min'] > 0
    assert 'error' not in nhwc and nhwc['flags'][-1] == '--batch_size=4'
    # This CPU build refuses NCHW (once, not again); where it runs, it reports a figure.
    assert 'images_per_sec' in nchw or nchw['error'].startswith('refused: --data_format=NCHW')


def test_a_refused_configuration_is_not_run_again():
    calls = []

    def refused(seed):
        calls.append(seed)
        return {'setting': 'x', 'seed': seed, 'error': 'refused: --data_format=NCHW: no'}
    measure = ablations.once_refused(refused)
    assert [measure(s)['seed'] for s in (1, 2, 3)] == [1, 2, 3] and calls == [1]


def _row(ablation, setting, *step_ms):
    return {'ablation': ablation, 'setting': setting,
            'step_time_ms': stats.summarise(step_ms)}


def test_gains_are_the_reference_step_time_over_each_repeat_and_marked():
    records = [_row('backup_workers', 'no straggler, 3 of 3', 50.0, 60.0, 40.0),
               _row('backup_workers', 'straggler, 3 of 3', 250.0, 240.0, 200.0),
               _row('backup_workers', 'straggler, 2 of 3 (1 backup)', 100.0, 120.0, 100.0),
               _row('pipelining', 'staged input', 40.0, 41.0, 39.0),
               _row('pipelining', 'sequential input', 50.0, 40.0, 45.0),
               _row('batchnorm', 'fused', 9.0, 9.5, 9.2)]
    ablations.mark(ablations.add_gains(records))
    gains = [r.get('step_time_gain', {}).get('values') for r in records]
    assert gains == [[5.0, 4.0, 5.0], [1.0, 1.0, 1.0], [2.5, 2.0, 2.0],
                     [1.25, 40.0 / 41.0, 45.0 / 39.0], [1.0, 1.0, 1.0], None]
    # Against 'straggler, 3 of 3' (200-250 ms): both others are faster in every repeat.
    assert records[0]['vs_reference']['step_time_ms'] == 'lower'
    assert records[2]['vs_reference']['step_time_ms'] == 'lower'
    # Staged 39-41 ms against sequential 40-50 ms: the ranges overlap.
    assert records[3]['vs_reference']['step_time_ms'] == 'within noise'
    assert 'vs_reference' not in records[5]   # the only batchnorm row is its own reference

"""The compression accuracy study at a tiny size: a record per scheme with real figures."""
import importlib.util
import math

from experiments import common
from experiments import compression_accuracy as study
from experiments import convergence
from experiments import stats

OPTIONS = convergence.Options(num_replicas=2, batch_size=16, num_steps=10, eval_every=10,
                              eval_batch_size=50, timeout_s=120, repeats=1)


def test_each_scheme_trains_and_is_compared_with_float32(shapes_dir, tmp_path, capsys):
    # float32 and sign: a scheme that cannot be summed, with a residual per tower; its
    # momentum on the senders (momentum correction), float32's in its optimizer.
    schemes = ['none', 'sign']
    rows = [lambda seed, s=s: study.measure(s, None, None, OPTIONS, shapes_dir, str(tmp_path),
                                            [], seed, momentum_correction=0.9)
            for s in schemes]
    records = study.compare_to_float32(
        common.repeat_in_rounds(rows, 1, 7, study.FIGURES))
    assert [r['label'] for r in records] == ['float32', 'sign']
    assert [r['wire_ratio'] for r in records] == [1.0, 1.0 / 32]
    assert [r['error_feedback'] for r in records] == [None, True]
    for record in records:
        assert record['study'] == 'compression_accuracy' and record['seeds'] == [7]
        assert record['global_steps'] == 10
        assert 0 <= record['final_accuracy']['median'] <= 1
        assert math.isfinite(record['final_loss']['median']) and record['final_loss']['n'] == 1
        # Each run trained with its scheme: the flag reached tfhp.
        assert '--gradient_compression=' + record['scheme'] in record['extra_flags']
        assert record['momentum_correction'] == 0.9
    assert {'--optimizer=momentum', '--momentum=0.9'} <= set(records[0]['extra_flags'])
    assert {'--optimizer=sgd', '--momentum_correction=0.9'} <= set(records[1]['extra_flags'])
    assert 'verdict' not in records[0]
    for record in records[1:]:
        # One repeat separates nothing (experiments/stats.py).
        assert record['verdict'] == 'within noise'
        assert record['accuracy_vs_float32'] == (record['final_accuracy']['median'] -
                                                 records[0]['final_accuracy']['median'])
    lines = study.conclusion(records, study.Chance.of(shapes_dir))
    assert lines[0] == 'sign: top-1 %+.3f vs float32, within noise' % records[1][
        'accuracy_vs_float32']
    if importlib.util.find_spec('matplotlib'):
        path = tmp_path / 'accuracy.png'
        study.plot(records, str(path), study.title(OPTIONS), study.Chance.of(shapes_dir),
                   'a machine; a date; commit 0')
        assert path.read_bytes()[:8] == b'\x89PNG\r\n\x1a\n'
    common.print_table(records, study.TABLE, 'float32')
    assert capsys.readouterr().out.splitlines()[1].startswith('float32 ')


def test_a_downlink_row_trains_between_graphs_with_its_deltas(monkeypatch):
    ran = []
    monkeypatch.setattr(convergence, 'run_combo',
                        lambda combo, *args: ran.append((combo, args)) or {})
    record = study.measure('topk', None, 0.1, OPTIONS, 'data', 'work', [], 7, downlink='sign')
    (combo, (options, _, _, flags, label, seed)), = ran
    assert combo == 'between_graph_sync' and (label, seed) == ('topk, sign down', 7)
    assert options.spare_replicas == 0  # every worker applies every delta
    assert {'--variable_update=distributed_replicated', '--downlink_compression=sign',
            '--gradient_compression=topk', '--compression_fraction=0.1'} <= set(flags)
    assert (record['downlink'], record['scheme']) == ('sign', 'topk')
    study.measure('none', None, None, OPTIONS, 'data', 'work', [], 7)
    assert ran[1][0] == 'in_graph_sync' and ran[1][1][4] == 'float32'


def test_wire_ratios_are_the_bytes_each_scheme_promises():
    assert [study.wire_ratio(s) for s in study.SCHEMES] == [
        1.0, 0.5, 0.5, 1.0 / 32, 1.0 / 32, 0.02, 0.02, 0.02]
    assert study.wire_ratio('topk', fraction=0.1) == 0.2


def test_each_scheme_without_error_feedback_follows_its_twin():
    assert study.twins(study.SCHEMES) == {'sign_noef': 'sign', 'topk_noef': 'topk'}
    assert study.ordered(['topk_noef', 'sign', 'randomk', 'topk', 'none', 'sign_noef']) == [
        'none', 'sign', 'sign_noef', 'randomk', 'topk', 'topk_noef']
    # Another fraction is still the same pair; the registered one is the default.
    assert study.twins(['topk', 'topk_noef'], fraction=0.1) == {'topk_noef': 'topk'}


def test_the_conclusion_says_what_error_feedback_buys_and_who_sits_at_chance():
    def row(scheme, twin, accuracies):
        return {'label': scheme, 'scheme': scheme, 'twin_of': twin,
                'final_accuracy': stats.summarise(accuracies)}
    records = [row('none', None, [0.90, 0.91, 0.92]), row('topk', None, [0.88, 0.90, 0.93]),
               row('topk_noef', 'topk', [0.10, 0.11, 0.12])]
    records[0]['label'] = 'float32'
    records[0]['scheme'] = 'none'
    lines = study.conclusion(study.compare_to_float32(records), study.Chance(0.1, 0.0134))
    assert lines == ['topk: top-1 -0.010 vs float32, within noise',
                     'topk_noef: top-1 -0.800 vs float32, lower',
                     'error feedback buys topk +0.790 top-1 over topk_noef (real)',
                     'topk_noef sits at chance (0.10)']

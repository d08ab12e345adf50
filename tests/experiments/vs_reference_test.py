"""The side-by-side benchmark: its rows, the ratio within a round, and a reference faked on disk."""
import json
import subprocess
import sys

import pytest

from experiments import common
from experiments import vs_reference

# Stands in for tf_cnn_benchmarks.py: records its flags, prints its summary line.
FAKE = '''import json, sys
with open(%r, 'a') as f:
    f.write(json.dumps(sys.argv[1:]) + '\\n')
print('Step\\tImg/sec\\ttotal_loss')
print('total images/sec: 100.00')
'''


def test_rows_give_both_programs_the_same_flags_and_each_its_own():
    made = vs_reference.rows(['resnet50:8'], '/data', 'trivial:32', ['RecordInput', 'tf.data'],
                             'NHWC', 50, 5)
    assert [r.label for r in made] == ['resnet50 b8 synthetic', 'trivial b32 RecordInput',
                                       'trivial b32 tf.data']
    shared = ['--model=resnet50', '--batch_size=8', '--device=cpu', '--data_format=NHWC',
              '--num_batches=50', '--num_warmup_batches=5', '--tf_random_seed=3']
    # The reference's default data set is ImageNet's 1001 classes, synthetic data included.
    assert made[0].args(3) == shared + ['--num_classes=1001']
    assert made[0].reference_args(3) == shared
    record_input = made[1]
    assert '--use_datasets=false' in record_input.args(1)
    assert '--use_datasets=true' in made[2].reference_args(1)
    assert record_input.args(1)[-1] == '--num_classes=1001'
    assert record_input.reference_args(1)[-1] == '--data_name=imagenet'
    with pytest.raises(ValueError, match='MODEL:BATCH_SIZE'):
        vs_reference.parse_model('resnet50')


def test_the_ratio_is_taken_within_a_round_and_marked_by_a_sign_test(tmp_path):
    argv_log = tmp_path / 'argv.jsonl'
    fake = tmp_path / 'tf_cnn_benchmarks.py'
    fake.write_text(FAKE % str(argv_log))
    (row,) = vs_reference.rows(['trivial:2'], None, None, [], 'NHWC', 1, 0)
    row.shared.append('--image_size=8')  # tfhp's tiny run; the fake reference takes anything
    record = vs_reference.measure(row, str(fake), 300, seed=5)
    assert 'error' not in record, record['error']
    assert record['reference_images_per_sec'] == 100.0
    assert record['ratio'] == pytest.approx(record['tfhp_images_per_sec'] / 100.0)
    assert json.loads(argv_log.read_text()) == row.reference_args(5)

    def ratios(*values):
        return {'ratio': {'n': len(values), 'values': list(values), 'median': values[0],
                          'min': min(values), 'max': max(values)}}
    records = [ratios(1.1, 1.2), ratios(1.1, 1.2, 1.05, 1.3, 1.2), ratios(0.9, 0.8, 0.95, 0.9,
                                                                          0.7),
               ratios(1.1, 0.9, 1.2, 1.3, 1.2)]
    vs_reference.mark_ratios(records)
    assert [r['vs_reference']['ratio'] for r in records] == [
        'within noise', 'higher', 'lower', 'within noise']


def test_a_failing_reference_is_named_and_a_missing_one_refused(tmp_path):
    broken = tmp_path / 'broken.py'
    broken.write_text('import sys\nsys.exit("no such model")\n')
    ips, error = vs_reference.reference_images_per_sec(str(broken), [], 60)
    assert ips is None and error == 'failed (exit status 1): no such model'
    proc = subprocess.run([sys.executable, '-m', 'experiments.vs_reference',
                           '--reference=%s' % (tmp_path / 'absent.py')], capture_output=True,
                          text=True, timeout=120, cwd=common.REPO_ROOT)
    assert proc.returncode == 2
    assert proc.stderr.strip().endswith('absent.py: no such file (the path of '
                                        'tf_cnn_benchmarks.py)')


def _exec_line(problem, ms):
    return ('onednn_verbose,v1,primitive,exec,cpu,convolution,brgconv_1x1:avx512_core,'
            'forward_training,src:f32::blocked:acdb::f0,,,%s,%s\n' % (problem, ms))


def test_the_kernels_of_one_more_verbose_run_of_each_are_compared(monkeypatch):
    calls = []
    outputs = {'tfhp': _exec_line('mb8_ic64oc256', 2.0) + 'total images/sec: 7.0\n',
               'reference': _exec_line('mb8_ic64oc256', 4.0) + _exec_line('mb8_ic64oc1001', 1.0)}

    def fake_output(command, timeout_s, cwd=None, env=None):
        calls.append((command, cwd, env))
        return outputs['tfhp' if command[1:3] == ['-m', 'tfhp'] else 'reference'], None

    monkeypatch.setattr(vs_reference, '_output', fake_output)
    (row,) = vs_reference.rows(['resnet50:8'], None, None, [], 'NHWC', 30, 5)
    record = vs_reference.compare_kernels(row, '/refs/tf_cnn_benchmarks.py', 4, 60, seed=7)
    assert record == {'kernel_ratio': 0.5, 'kernel_problems': 1,
                      'kernel_problems_only_tfhp': 0, 'kernel_problems_only_reference': 1}
    (tfhp_command, _, tfhp_env), (ref_command, ref_cwd, ref_env) = calls
    assert tfhp_command[3:] == row.args(7) + ['--num_batches=4']
    assert ref_command[1:] == ['/refs/tf_cnn_benchmarks.py'] + row.reference_args(7) + [
        '--num_batches=4']
    assert ref_cwd == '/refs' and tfhp_env == ref_env == {'ONEDNN_VERBOSE': '1'}

    outputs['reference'] = 'total images/sec: 7.0\n'
    assert vs_reference.compare_kernels(row, '/refs/tf_cnn_benchmarks.py', 4, 60, 7) == {
        'kernel_error': 'no oneDNN executions logged (not a oneDNN build?)'}
    monkeypatch.setattr(vs_reference, '_output',
                        lambda command, *a, **k: (None, 'timed out after 60 s')
                        if command[1] != '-m' else (outputs['tfhp'], None))
    assert vs_reference.compare_kernels(row, '/refs/tf_cnn_benchmarks.py', 4, 60, 7) == {
        'kernel_error': 'reference: timed out after 60 s'}

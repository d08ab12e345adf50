"""Reading ONEDNN_VERBOSE logs: executions, groups, and two runs compared problem by problem."""
import json
import subprocess
import sys

import pytest

from tfhp.profiling import onednn_log

CONV_1X1 = ('src:f32::blocked:acdb::f0 wei:f32:a:blocked:Acdb64a::f0 dst:f32::blocked:acdb::f0,'
            'attr-scratchpad:user,alg:convolution_direct,mb8_ic64oc256_ih56oh56kh1sh1dh0ph0'
            '_iw56ow56kw1sw1dw0pw0')
REORDER = 'src:f32::blocked:cdba::f0 dst:f32::blocked:Acdb64a::f0,,,64x3x7x7'


def _line(kind, impl, prop, problem, ms):
    return 'onednn_verbose,v1,primitive,exec,cpu,%s,%s,%s,%s,%s\n' % (kind, impl, prop, problem,
                                                                     ms)


LOG = [
    'onednn_verbose,v1,info,oneDNN v3.7.1 (commit 1234)\n',
    'onednn_verbose,v1,primitive,info,template:operation,engine,primitive,implementation,'
    'prop_kind,memory_descriptors,attributes,auxiliary,problem_desc,exec_time\n',
    'total images/sec: 7.00\n',
    _line('convolution', 'brgconv_1x1:avx512_core', 'forward_training', CONV_1X1, 9.0),  # cold
    _line('convolution', 'brgconv_1x1:avx512_core', 'forward_training', CONV_1X1, 2.0),
    _line('convolution', 'brgconv_1x1:avx512_core', 'forward_training', CONV_1X1, 3.0),
    _line('reorder', 'jit:uni', 'undef', REORDER, 0.5),
    # oneDNN 2.x's form: no `v1,primitive` fields.
    'onednn_verbose,exec,cpu,reorder,jit:uni,undef,%s,0.25\n' % REORDER,
    # A graph partition's execution is laid out otherwise: not a primitive.
    'onednn_verbose,v1,graph,exec,cpu,100002,matmul_post_ops,MatMul;Add,data:abc,in0_f32:0:'
    'strided:undef:1x2x3:6s3s1,f32,dnnl_backend,1.5\n',
]


def test_executions_are_read_from_either_form_of_line_and_everything_else_is_skipped():
    executions = onednn_log.parse(LOG)
    assert [(e.kind, e.impl, e.prop, e.ms) for e in executions] == [
        ('convolution', 'brgconv_1x1:avx512_core', 'forward_training', 9.0),
        ('convolution', 'brgconv_1x1:avx512_core', 'forward_training', 2.0),
        ('convolution', 'brgconv_1x1:avx512_core', 'forward_training', 3.0),
        ('reorder', 'jit:uni', 'undef', 0.5),
        ('reorder', 'jit:uni', 'undef', 0.25)]
    # The problem keeps the formats and attributes (a fused post-op is another problem).
    assert executions[0].problem == CONV_1X1
    assert executions[-1].problem == executions[-2].problem == REORDER


def test_groups_count_executions_distinct_problems_and_time_costliest_first():
    other = CONV_1X1.replace('oc256', 'oc64')
    executions = onednn_log.parse(LOG + [_line('convolution', 'brgconv_1x1:avx512_core',
                                            'forward_training', other, 1.0)])
    conv, reorder = onednn_log.summarize(executions)
    assert (conv.kind, conv.count, conv.problems, conv.total_ms) == ('convolution', 4, 2, 15.0)
    assert (reorder.kind, reorder.count, reorder.problems, reorder.total_ms) == (
        'reorder', 2, 1, 0.75)
    table = onednn_log.format_summary([conv, reorder])
    assert '95.2%' in table and '4.8%' in table  # 15 and 0.75 of 15.75 ms


def test_two_runs_are_compared_by_median_per_problem_and_their_differences_listed():
    a = onednn_log.parse(LOG)
    only_b = CONV_1X1.replace('ic64', 'ic128')
    b = onednn_log.parse([
        _line('convolution', 'brgconv_1x1:avx512_core', 'forward_training', CONV_1X1, 2.0),
        _line('convolution', 'brgconv_1x1:avx512_core', 'forward_training', only_b, 7.0),
        _line('reorder', 'jit:uni', 'undef', REORDER, 0.5),
        # The same problem by another implementation is another kernel.
        _line('convolution', 'jit_1x1:avx512_core', 'forward_training', CONV_1X1, 4.0)])
    rows = {(r.kind, r.impl): r for r in onednn_log.compare(a, b)}
    conv = rows['convolution', 'brgconv_1x1:avx512_core']
    # a's median over its three runs of the problem is 3.0 ms: the cold 9 ms does not count.
    assert (conv.common, conv.ms_a, conv.ms_b, conv.only_a, conv.only_b) == (1, 3.0, 2.0, 0, 1)
    reorder = rows['reorder', 'jit:uni']
    assert (reorder.common, reorder.ms_a, reorder.ms_b) == (1, 0.375, 0.5)
    jit = rows['convolution', 'jit_1x1:avx512_core']
    assert (jit.common, jit.ms_b, jit.only_a, jit.only_b) == (0, 0.0, 0, 1)
    assert onednn_log.common_ratio(list(rows.values())) == pytest.approx(3.375 / 2.5)
    assert 'ratio 1.350' in onednn_log.format_comparison(list(rows.values()), 'tfhp', 'ref')
    assert onednn_log.common_ratio([]) is None


def test_a_truncated_line_and_a_log_without_executions_are_named(tmp_path):
    truncated = tmp_path / 'cut.log'
    truncated.write_text(LOG[3] + LOG[4][:-8] + '\n')
    with pytest.raises(ValueError, match='cut.log: line 2: an execution without a time'):
        onednn_log.read(str(truncated))
    plain = tmp_path / 'plain.log'
    plain.write_text('total images/sec: 7.00\n')
    with pytest.raises(ValueError, match='plain.log: no oneDNN primitive executions.*'
                       'ONEDNN_VERBOSE=1'):
        onednn_log.read(str(plain))


def _cli(*args):
    return subprocess.run([sys.executable, '-m', 'tfhp.kernels'] + list(args),
                          capture_output=True, text=True, timeout=120)


def test_the_command_compares_two_logs_and_refuses_a_missing_one(tmp_path):
    a, b = tmp_path / 'a.log', tmp_path / 'b.log'
    a.write_text(''.join(LOG))
    b.write_text(_line('convolution', 'brgconv_1x1:avx512_core', 'forward_training', CONV_1X1,
                       6.0) + _line('reorder', 'jit:uni', 'undef', REORDER, 0.75))
    proc = _cli('--json', str(a), str(b))
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)
    assert figures['common_ratio'] == pytest.approx((3.0 + 0.375) / (6.0 + 0.75))
    proc = _cli(str(a))
    assert proc.returncode == 0, proc.stderr
    assert 'brgconv_1x1:avx512_core' in proc.stdout
    proc = _cli(str(a), str(tmp_path / 'missing.log'))
    assert proc.returncode == 2
    assert 'missing.log' in proc.stderr

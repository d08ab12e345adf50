"""XLA: --xla_compile marks each tower for compilation, --xla auto-clusters; both are refused
(exit 2, before any graph is built) where the runtime's probe says the build cannot. The probes
are faked both ways: what a test machine's build answers is not assumed."""
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import benchmark
from tfhp.runner import build
from tfhp import cli
from tfhp import config as config_lib
from tfhp.runner import devices


def _main(args, capsys):
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp'] + args)
    try:
        status = cli.main(['tfhp'])
    finally:
        cli.FLAGS.unparse_flags()
    return status, capsys.readouterr()


@pytest.mark.parametrize('flag, probe', [('--xla_compile', 'supports_xla_compile'),
                                         ('--xla', 'supports_auto_jit')])
def test_xla_is_refused_before_building_where_the_probe_says_no(flag, probe, monkeypatch,
                                                                capsys):
    monkeypatch.setenv('TF_XLA_FLAGS', '')  # cli.main sets it for --xla; restored after
    asked = []
    monkeypatch.setattr(devices, probe, lambda device: asked.append(device) or False)
    status, out = _main([flag, '--num_batches=1'], capsys)
    assert status == 2 and asked == ['cpu']
    assert out.err.startswith('tfhp: error: %s: this TensorFlow build does not' % flag)
    assert len(out.err.splitlines()) == 1 and 'Model:' not in out.out


@pytest.mark.parametrize('field, probe', [('xla_compile', 'supports_xla_compile'),
                                          ('xla', 'supports_auto_jit')])
def test_xla_is_accepted_where_the_probe_says_yes(field, probe, monkeypatch):
    monkeypatch.setattr(devices, probe, lambda device: True)
    cfg = testing.small_config(xla={field: True})
    devices.check(cfg.device, cfg.model, cfg.xla)
    built = build.build(cfg)
    jit_level = built.session_config.graph_options.optimizer_options.global_jit_level
    assert (jit_level == tf.OptimizerOptions.ON_1) == (field == 'xla')


def _marked(graph):
    """Names of the ops marked for XLA compilation."""
    marked = []
    for op in graph.get_operations():
        try:
            if op.get_attr('_XlaCompile'):
                marked.append(op.name)
        except ValueError:
            pass
    return marked


def test_xla_compile_marks_the_towers_and_nothing_else(monkeypatch):
    monkeypatch.setattr(devices, 'supports_xla_compile', lambda device: True)
    cfg = testing.small_config(model='lenet', image_size=8, device={'num_devices': 2},
                               replication={'variable_update': 'replicated'},
                               xla={'xla_compile': True})
    marked = _marked(build.build(cfg).graph)
    for t in range(2):
        assert any(n.startswith('tower_%d/forward/conv' % t) for n in marked)
        assert any(n.startswith('tower_%d/backward/' % t) for n in marked)
    assert not [n for n in marked if n.startswith(('aggregate/', 'apply/', 'tower_0/input'))]
    assert not _marked(build.build(testing.replace(cfg, 'xla', xla_compile=False)).graph)
    inference = _marked(build.build(testing.replace(cfg, 'run', forward_only=True)).graph)
    assert any(n.startswith('tower_1/forward/conv') for n in inference)


def test_xla_compiled_towers_train_where_the_build_compiles(tmp_path):
    if not devices.supports_xla_compile('cpu'):
        pytest.skip('this TensorFlow build does not compile with XLA on the CPU')
    prefix = str(tmp_path / 'part.pbtxt')
    cfg = testing.small_config(model='lenet', image_size=8, num_batches=5,
                               optimizer={'learning_rate': 0.05}, xla={'xla_compile': True},
                               profile={'partitioned_graph_file_prefix': prefix})
    first = benchmark.run(testing.replace(cfg, 'run', num_batches=1), log=lambda _: None)
    last = benchmark.run(cfg, log=lambda _: None)
    assert np.isfinite(last['final_loss']) and last['final_loss'] < first['final_loss']
    partition = open(tmp_path / os.listdir(tmp_path)[0]).read()
    assert '_XlaRun' in partition or 'XlaLaunch' in partition  # compiled clusters ran


def test_xla_sets_the_runtime_flags_every_session_of_the_process_reads():
    cfg = testing.small_config(xla={'xla': True})
    assert cli.runtime_environment(cfg, {}) == {
        'TF_XLA_FLAGS': '--tf_xla_auto_jit=1 --tf_xla_cpu_global_jit'}
    kept = cli.runtime_environment(cfg, {'TF_XLA_FLAGS': '--tf_xla_auto_jit=1 --other'})
    assert kept == {'TF_XLA_FLAGS': '--tf_xla_auto_jit=1 --other --tf_xla_cpu_global_jit'}
    assert cli.runtime_environment(cfg, {'TF_XLA_FLAGS': kept['TF_XLA_FLAGS']}) == {}
    assert cli.runtime_environment(testing.small_config(), {}) == {}
    assert cli.runtime_environment(
        testing.small_config(device={'mkl': True}), {})['KMP_BLOCKTIME'] == '0'
    with pytest.raises(config_lib.ConfigError, match='--kmp_affinity .* --mkl'):
        testing.small_config(device={'kmp_affinity': 'compact'})

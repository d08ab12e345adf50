"""The benchmark runner end to end on tiny configurations: results, checkpoints, eval, errors."""
import json

import pytest

from tests import testing
from tfhp.runner import benchmark
from tfhp.runner import build
from tfhp import config as config_lib
from tfhp.runner import devices


def test_result_line_holds_figures_and_config(tmp_path):
    out = tmp_path / 'results.jsonl'
    lines = []
    cfg = testing.small_config(num_batches=4, run={'result_file': str(out)})
    result = benchmark.run(cfg, log=lines.append)
    record = json.loads(out.read_text().splitlines()[0])
    assert record['images_per_sec'] == pytest.approx(result['images_per_sec'])
    assert record['images_per_sec'] > 0
    assert set(record['step_time_ms']) >= {'mean', 'p50', 'p90', 'std'}
    assert record['num_devices'] == 1
    # trivial at 16x16x3, 10 classes: 768*1+1 + 1*4096+4096 + 4096*10+10.
    assert record['num_params'] == 769 + 8192 + 40970
    assert record['config']['model']['name'] == 'trivial'
    assert record['num_steps'] == 4
    assert any(l.startswith('total images/sec:') for l in lines)


def test_training_lowers_the_loss_on_fixed_synthetic_data():
    cfg = testing.small_config(model='lenet', image_size=28, num_batches=30,
                               optimizer={'learning_rate': 0.05, 'optimizer': 'momentum'})
    first = benchmark.run(testing.replace(cfg, 'run', num_batches=1), log=lambda _: None)
    last = benchmark.run(cfg, log=lambda _: None)
    assert last['final_loss'] < 0.5 * first['final_loss']


def test_checkpoint_resume_and_eval(tmp_path):
    cfg = testing.small_config(num_batches=3, run={'train_dir': str(tmp_path)})
    first = benchmark.run(cfg, log=lambda _: None)
    # 1 warm-up + 3 timed steps.
    assert first['global_step'] == 4
    second = benchmark.run(cfg, log=lambda _: None)
    assert second['global_step'] == 8
    evaluated = benchmark.run(testing.replace(cfg, 'run', eval=True, num_batches=2),
                              log=lambda _: None)
    assert evaluated['mode'] == 'eval'
    assert evaluated['global_step'] == 8
    assert 0.0 <= evaluated['top_1_accuracy'] <= evaluated['top_5_accuracy'] <= 1.0


def test_eval_without_checkpoint_is_refused(tmp_path):
    cfg = testing.small_config(run={'train_dir': str(tmp_path / 'empty'), 'eval': True})
    with pytest.raises(config_lib.ConfigError, match='no checkpoint'):
        benchmark.run(cfg, log=lambda _: None)


def test_unwritable_result_file_is_refused_before_building(tmp_path, monkeypatch):
    built = []
    monkeypatch.setattr(benchmark, 'build', lambda *args, **kwargs: built.append(args))
    cfg = testing.small_config(run={'result_file': str(tmp_path)})
    with pytest.raises(config_lib.ConfigError,
                       match='--result_file=%s: is a directory' % tmp_path):
        benchmark.run(cfg, log=lambda _: None)
    assert not built


def test_nchw_is_refused_before_building_where_the_probe_says_no(monkeypatch):
    # The probe's answer depends on the CPU (AVX-512 builds run NCHW), so it is faked both ways.
    cfg = testing.replace(testing.small_config(), 'model', data_format='NCHW')
    asked = []
    monkeypatch.setattr(devices, 'supports_nchw', lambda device: asked.append(device) or False)
    with pytest.raises(config_lib.ConfigError, match='--data_format=NCHW: .*CPU kernels'):
        build.build(cfg)
    assert asked == ['cpu']
    monkeypatch.setattr(devices, 'supports_nchw', lambda device: True)
    devices.check(cfg.device, cfg.model)  # accepted where the kernels run NCHW


def test_training_accuracy_is_reported():
    cfg = testing.small_config(run={'print_training_accuracy': True})
    result = benchmark.run(cfg, log=lambda _: None)
    assert 0.0 <= result['train_top1'] <= result['train_top5'] <= 1.0

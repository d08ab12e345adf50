"""The bottleneck report: figures and verdicts from known timings, and one real diagnosis."""
import importlib.util
import os
import subprocess
import sys

import pytest

from tests import testing
from tfhp import diagnose
from tfhp import plots
from tfhp.profiling import stage_figure
from tfhp.profiling import analysis
from tfhp.profiling import bottleneck

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _result(step_ms):
    return {'step_time_ms': {'p50': step_ms}, 'images_per_sec': 1000.0 / step_ms}


def _step(transfer_bytes=0):
    devices = [analysis.DeviceFigures('CPU:0', 8.0, 2.0, {'forward': 2.0, 'backward': 6.0}, 9),
               analysis.DeviceFigures('CPU:1', 5.0, 5.0, {'forward': 5.0}, 4)]
    return analysis.StepAnalysis(
        step_time=10.0, stage_names=('forward', 'backward'), devices=devices, critical_path=[],
        links={'CPU:0->CPU:1': (1, transfer_bytes)}, transfer_time=0.0,
        hidden_transfer_time=0.0, overlap_efficiency=None, top_ops=[])


def test_exposures_scaling_and_bound_from_known_timings():
    runs = {'configured': _result(10.0), 'synthetic data': _result(6.0),
            'independent': _result(9.0), 'one device': _result(4.0)}
    d = bottleneck.diagnose(runs, {}, _step(transfer_bytes=10 ** 6), bandwidth=1e9,
                            num_devices=2)
    assert d.input_exposure == pytest.approx(0.4)
    assert d.communication_exposure == pytest.approx(0.1)
    assert d.scaling_efficiency == pytest.approx(0.4)
    assert d.transfer_bound == pytest.approx(0.1)   # 1 MB at 1 GB/s: 1 ms of 10 ms
    assert (d.busiest_device, d.busiest_stage, d.busiest_stage_share) == ('CPU:0', 'backward',
                                                                         0.75)
    assert d.verdict.startswith('Bottleneck: input:') and '40%' in d.verdict
    # Stage self times in ms (the analysis's are microseconds), stages without time left out.
    assert d.stage_ms == {'CPU:0': {'forward': 0.002, 'backward': 0.006},
                          'CPU:1': {'forward': 0.005}}


def test_poor_scaling_without_exposure_blames_shared_cores():
    runs = {'configured': _result(10.0), 'independent': _result(9.5),
            'one device': _result(5.0)}
    d = bottleneck.diagnose(runs, {'synthetic data': 'no real data'}, _step(), 1e9,
                            num_devices=2, shared_cores=2)
    assert d.input_exposure is None
    assert d.verdict == ('Bottleneck: compute does not scale: 50% scaling efficiency over 2 '
                         'devices, of which input and communication exposure explain 5 points; '
                         "the 2 virtual CPU devices share the host's 2 cores.")
    report = bottleneck.format_diagnosis(d)
    assert 'synthetic data   skipped: no real data' in report
    assert 'input exposure:          n/a (skipped: no real data)' in report
    assert report.splitlines()[-1] == d.verdict


def test_compute_verdict_names_the_busiest_stage():
    d = bottleneck.diagnose({'configured': _result(10.0)}, {}, _step(), 1e9, num_devices=1)
    assert d.verdict == ("Bottleneck: compute: backward takes 75% of the busiest device's "
                         "(CPU:0) busy time.")


def test_memcpy_bandwidth_is_measured():
    # Any machine copies faster than 100 MB/s; the figure is bytes per second, not GB/s.
    assert 1e8 < bottleneck.memcpy_bandwidth(num_bytes=8 << 20, repeats=2) < 1e13


def test_ablations_replace_one_setting_each_and_say_why_others_are_skipped():
    cfg = testing.small_config(device={'num_devices': 2})
    variants = dict(diagnose.ablations(cfg))
    assert variants['synthetic data'] == 'no real data configured (--data_dir)'
    assert variants['independent'].replication.variable_update == 'independent'
    assert variants['one device'].device.num_devices == 1
    assert variants['one device'].replication == cfg.replication
    single = dict(diagnose.ablations(testing.small_config(
        replication={'variable_update': 'independent'})))
    assert single['one device'] == 'the configuration has one device'
    assert single['independent'] == 'the configuration is already independent'
    # One device of an aggregating strategy communicates nothing either.
    one = dict(diagnose.ablations(testing.small_config()))
    assert testing.small_config().replication.strategy.aggregates
    assert one['independent'] == 'one device: no gradients to aggregate, nothing communicated'


def _has_matplotlib():
    return importlib.util.find_spec('matplotlib') is not None


def test_diagnosis_of_a_two_device_run(tmp_path):
    cfg = testing.small_config(num_batches=6, device={'num_devices': 2},
                               run={'num_warmup_batches': 2})
    lines = []
    d = diagnose.diagnose(cfg, log=lines.append)
    assert set(d.runs) == {'configured', 'independent', 'one device'}
    assert set(d.skipped) == {'synthetic data'}
    assert d.runs['one device']['num_devices'] == 1
    assert d.runs['configured']['num_steps'] == 6
    # The traced step moved every gradient of tower 1 (float32) to the parameter device.
    assert d.transfer_bytes >= 4 * d.runs['configured']['num_params']
    assert d.verdict.startswith('Bottleneck: ')
    assert len(lines) == 3
    assert set(d.stage_ms) == {'CPU:0', 'CPU:1'} and d.stage_ms['CPU:0']['backward'] > 0
    # The figure's points: a stage of a device each, then a run each, configured first.
    data = stage_figure.points(d)
    assert [(p['device'], p['stage']) for p in data if 'stage' in p] == [
        (device, stage) for device, per_stage in d.stage_ms.items() for stage in per_stage]
    assert [p['run'] for p in data if 'run' in p][0] == 'configured'
    if _has_matplotlib():  # --plot's figure (else the next test covers the refusal)
        path = tmp_path / 'diagnose.png'
        stage_figure.draw_data(str(path), {'title': d.verdict}, data)
        assert path.read_bytes()[:4] == b'\x89PNG' and path.stat().st_size > 1000


def test_plot_without_matplotlib_is_refused_with_the_install_hint(tmp_path):
    fake = tmp_path / 'fake' / 'matplotlib'
    fake.mkdir(parents=True)
    (fake / '__init__.py').write_text("raise ImportError('no matplotlib here (faked)')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / 'fake'), ROOT]))
    proc = subprocess.run([sys.executable, '-m', 'tfhp.diagnose',
                           '--plot=%s' % (tmp_path / 'd.png')], capture_output=True, text=True,
                          timeout=120, cwd=ROOT, env=env)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == 'tfhp.diagnose: error: ' + plots.INSTALL_HINT


def test_diagnose_command_refuses_bad_flags():
    proc = subprocess.run([sys.executable, '-m', 'tfhp.diagnose', '--batch_size=0'],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 2
    assert '--batch_size' in proc.stderr and 'Traceback' not in proc.stderr

"""--plot: PNGs where matplotlib is installed; exit status 2 and the install hint where not;
--figure_data refused before any work where it cannot be written."""
import importlib.util
import os
import subprocess
import sys

import pytest

from experiments import allreduce_bench
from experiments import common
from experiments import distributed_bench
from experiments import replication_bench
from experiments import stats
from tfhp import plots

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _has_matplotlib():
    return importlib.util.find_spec('matplotlib') is not None


needs_matplotlib = pytest.mark.skipif(not _has_matplotlib(),
                                      reason="matplotlib is not installed (pip install -e "
                                             "'.[plots]')")


def _check_png(path):
    with open(path, 'rb') as f:
        assert f.read(8) == b'\x89PNG\r\n\x1a\n'
    assert os.path.getsize(path) > 1000


def test_plot_without_matplotlib_exits_2_with_the_install_hint(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, 'matplotlib', None)  # import matplotlib now fails
    with pytest.raises(SystemExit) as exit_info:
        common.check_plot(str(tmp_path / 'x.png'))
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [plots.INSTALL_HINT] and "pip install -e '.[plots]'" in err[0]
    common.check_plot(None)  # no --plot: nothing to check


@needs_matplotlib
def test_an_unwritable_plot_path_is_refused_before_any_work(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_info:
        common.check_plot(str(tmp_path / 'missing' / 'x.png'))
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith('--plot=')
    # --figure_data as well, with or without matplotlib.
    with pytest.raises(SystemExit) as exit_info:
        common.check_output('figure_data', str(tmp_path / 'missing' / 'x.jsonl'))
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.startswith('--figure_data=')
    common.check_output('figure_data', None)  # none given: nothing to check


def test_a_script_refuses_plot_without_matplotlib_at_once(tmp_path):
    fake = tmp_path / 'fake' / 'matplotlib'
    fake.mkdir(parents=True)
    (fake / '__init__.py').write_text("raise ImportError('no matplotlib here (faked)')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / 'fake'), REPO]))
    proc = subprocess.run([sys.executable, '-m', 'experiments.four_combos',
                           '--plot=%s' % (tmp_path / 'c.png'), '--work_dir=%s' % tmp_path],
                          capture_output=True, text=True, timeout=120, env=env, cwd=REPO)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == plots.INSTALL_HINT


def _summary(*values):
    return stats.summarise(values)


@needs_matplotlib
def test_benchmark_plots_write_pngs(tmp_path):
    replication = [{'variant': v, 'num_devices': n, 'model': 'lenet', 'repeats': 2,
                    'images_per_sec': _summary(900.0 * k, 950.0 * k),
                    'scaling_efficiency': _summary(1.0 / n, 1.1 / n)}
                   for v, k in (('independent', 1.0), ('replicated', 0.9)) for n in (1, 2, 4)]
    replication_bench.plot(replication, str(tmp_path / 'replication.png'))
    _check_png(str(tmp_path / 'replication.png'))

    allreduce = [{'algorithm': a, 'num_devices': n, 'device': 'cpu', 'bytes': size,
                  'seconds': _summary(1e-4, 2e-4), 'session_run_floor_seconds': 9e-5,
                  'busbw_bytes_per_sec': _summary(size / 2e-4, size / 1e-4)}
                 for a in ('pscpu', 'xring') for n in (2, 4) for size in (1024, 1 << 20)]
    allreduce_bench.plot(allreduce, _summary(8e9, 9e9), str(tmp_path / 'allreduce.png'))
    _check_png(str(tmp_path / 'allreduce.png'))

    null = [{'study': 'null', 'model': m, 'label': '%s %s' % (m, p), 'num_workers': n,
             'num_ps': 2, 'repeats': 2, 'global_steps_per_sec': _summary(100.0 / n, 120.0 / n)}
            for m in ('null_scalar', 'null_dense') for p in ('sync', 'async') for n in (1, 2)]
    distributed_bench.plot(null, str(tmp_path / 'null.png'))
    _check_png(str(tmp_path / 'null.png'))


def test_a_figure_goes_to_its_path_and_an_svg_beside_it():
    drawn = []
    assert plots.draw_with_svg(drawn.append, 'out/fig.png') == ('out/fig.png', 'out/fig.svg')
    assert plots.draw_with_svg(drawn.append, 'out/fig.svg') == ('out/fig.svg',)
    assert drawn == ['out/fig.png', 'out/fig.svg', 'out/fig.svg']

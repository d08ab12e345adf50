"""An entry point's process settings: set where the user did not, and Keras skipped at import;
a shadowed tfhp package refused."""
import importlib.util
import os
import subprocess
import sys
import types

import pytest

import tfhp
from tfhp import startup

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_settings_fill_in_what_the_user_left_unset(monkeypatch):
    monkeypatch.delenv('TF_USE_LEGACY_KERAS', raising=False)
    monkeypatch.setenv('TF_CPP_MIN_LOG_LEVEL', '0')  # the user wants TensorFlow's C++ logs
    startup.prepare_process()
    assert os.environ['TF_CPP_MIN_LOG_LEVEL'] == '0'
    assert os.environ['TF_USE_LEGACY_KERAS'] == '1'


@pytest.mark.skipif(importlib.util.find_spec('tf_keras') is not None,
                    reason='tf_keras is installed: TensorFlow imports it instead')
def test_tensorflow_imported_after_the_settings_leaves_keras_out():
    # The saving is TensorFlow's to keep or lose on an upgrade: this says when it is lost.
    program = ('import sys; from tfhp import startup; startup.prepare_process(); '
               'import tensorflow.compat.v1 as tf; '
               'print(sorted(m for m in sys.modules if m.split(".")[0] == "keras"))')
    env = {k: v for k, v in os.environ.items() if k != 'TF_USE_LEGACY_KERAS'}
    out = subprocess.run([sys.executable, '-c', program], env=env, capture_output=True,
                         text=True, timeout=120, check=True).stdout
    assert out.strip().splitlines()[-1] == '[]'


def test_a_namespace_tfhp_is_a_shadow_and_the_package_is_not(tmp_path):
    shadow = types.ModuleType('tfhp')
    shadow.__path__ = [str(tmp_path / 'tfhp')]  # what `import tfhp` gives for a bare directory
    assert startup.shadowing_directories(shadow) == [str(tmp_path / 'tfhp')]
    assert startup.shadowing_directories(tfhp) == []


# A process as an editable install starts it: no site-packages (-S), tfhp's modules found by a
# finder asked after the path finder, as setuptools' editable finder is.
_EDITABLE_START = """
import importlib.machinery, os, sys
class EditableFinder:
    def find_spec(self, name, path=None, target=None):
        if name.partition('.')[0] == 'tfhp':
            where = os.path.join(%r, *name.split('.')[:-1])
            return importlib.machinery.PathFinder.find_spec(name, [where])
sys.meta_path.append(EditableFinder())
from tfhp import startup
startup.prepare_process()
print('prepared')
"""


@pytest.mark.parametrize('clone_root_here', [True, False])
def test_a_clone_root_named_tfhp_in_the_working_directory_is_refused(tmp_path, clone_root_here):
    if clone_root_here:
        (tmp_path / 'tfhp' / 'docs').mkdir(parents=True)
        (tmp_path / 'tfhp' / 'setup.py').write_text('')
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    proc = subprocess.run([sys.executable, '-S', '-c', _EDITABLE_START % REPO], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=60)
    if clone_root_here:
        assert proc.returncode == 2 and proc.stdout == ''
        assert proc.stderr.startswith('tfhp: error: %s shadows the tfhp package' % (
            tmp_path / 'tfhp'))
        assert 'cd elsewhere' in proc.stderr and 'pip install <clone>' in proc.stderr
    else:
        assert (proc.returncode, proc.stdout) == (0, 'prepared\n'), proc.stderr

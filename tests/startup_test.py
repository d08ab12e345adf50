"""An entry point's process settings: set where the user did not, and Keras skipped at import;
a shadowed tfhp package refused."""
import functools
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
    assert _import_tensorflow(None)[0][-1] == '[]'


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


# TensorFlow's libraries log "oneDNN custom operations are on" as they load, straight to stderr
# at any TF_CPP_MIN_LOG_LEVEL (once per library: twice); TF_ENABLE_ONEDNN_OPTS=1 turns oneDNN on
# as a CPU with AVX512_VNNI does by default.
_IMPORT = ('from tfhp import startup; startup.prepare_process(); import sys; '
           'import tensorflow.compat.v1; '
           'print(type(sys.modules["tensorflow"].__loader__).__name__); '
           'print(sorted(m for m in sys.modules if m.split(".")[0] == "keras"))')


@functools.lru_cache(maxsize=None)
def _import_tensorflow(level):
    """(stdout lines, stderr) of a process that imports TensorFlow after the settings, where the
    user set neither TF_USE_LEGACY_KERAS nor (unless `level`) TF_CPP_MIN_LOG_LEVEL, with oneDNN
    on. The tests that read the same level read one process: each is mostly TensorFlow's
    import."""
    env = {k: v for k, v in os.environ.items()
           if k not in ('TF_USE_LEGACY_KERAS', 'TF_CPP_MIN_LOG_LEVEL')}
    env.update(TF_ENABLE_ONEDNN_OPTS='1', PYTHONPATH=REPO)
    if level is not None:  # the user wants TensorFlow's start-up lines
        env['TF_CPP_MIN_LOG_LEVEL'] = level
    done = subprocess.run([sys.executable, '-c', _IMPORT], env=env, capture_output=True,
                          text=True, timeout=180, check=True)
    return done.stdout.strip().splitlines(), done.stderr


@pytest.mark.parametrize('level, notices', [(None, 0), ('0', 2)])
def test_tensorflows_import_keeps_to_the_log_level(level, notices):
    out, err = _import_tensorflow(level)
    assert err.count('oneDNN custom operations are on') == notices, err
    assert out[0] == 'SourceFileLoader'  # the module's own loader, put back
    assert len(out) == 2  # and the Keras modules' line: nothing else on stdout


def test_below_level_drops_absls_early_lines_under_the_level_and_keeps_the_rest():
    text = ('WARNING: All log messages before absl::InitializeLog() is called are written to '
            'STDERR\n'
            'I0000 00:00:17.5 12 port.cc:153] oneDNN custom operations are on.\n'
            'E0000 00:00:17.6 12 x.cc:1] a real error\n'
            'a Python warning\n')
    assert startup.below_level(text, 2) == ('E0000 00:00:17.6 12 x.cc:1] a real error\n'
                                            'a Python warning\n')
    assert startup.below_level(text, 0) == text

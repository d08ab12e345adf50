"""An entry point's process settings: set where the user did not, and Keras skipped at import."""
import importlib.util
import os
import subprocess
import sys

import pytest

from tfhp import startup


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

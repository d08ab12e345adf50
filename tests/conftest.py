"""Test set-up: the entry points' process settings and graph mode, for every test (and the
processes tests start inherit the settings)."""
from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from tfhp import compat  # pylint: disable=wrong-import-position

compat.enable_graph_mode()


def pytest_sessionfinish(session, exitstatus):
    """A run that collected no tests fails (pytest's exit 5 would otherwise pass silently)."""
    if exitstatus == 5:
        session.exitstatus = 1

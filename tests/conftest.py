"""Test set-up: the entry points' process settings and graph mode, for every test (and the
processes tests start inherit the settings)."""
from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

import pytest  # pylint: disable=wrong-import-position

from tfhp import compat  # pylint: disable=wrong-import-position
from tfhp.launcher import links  # pylint: disable=wrong-import-position

compat.enable_graph_mode()


def pytest_sessionfinish(session, exitstatus):
    """A run that collected no tests fails (pytest's exit 5 would otherwise pass silently)."""
    if exitstatus == 5:
        session.exitstatus = 1


@pytest.fixture(scope='session')
def links_available():
    """Skips, saying why, where this machine cannot emulate links (root, namespaces, tc)."""
    try:
        links.check_available()
    except links.LinksUnavailable as e:
        pytest.skip('this machine cannot emulate links: %s' % e)

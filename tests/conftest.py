"""Test set-up: the entry points' process settings and graph mode, for every test (and the
processes tests start inherit the settings), and one forkserver for every job's tasks."""
import os

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

import pytest  # pylint: disable=wrong-import-position

from tfhp import compat  # pylint: disable=wrong-import-position
from tfhp.launcher import forked_task  # pylint: disable=wrong-import-position
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


@pytest.fixture(scope='session', autouse=True)
def forkserver_for_every_job(tmp_path_factory):
    """The tasks of every job a test starts (in this process or a launcher it starts) are forks
    of one process that imported TensorFlow once (`tfhp.forkserver`): a small job's
    start is most of its test, and TensorFlow's import most of that start."""
    directory = tmp_path_factory.mktemp('forkserver')
    with open(directory / 'server.log', 'w') as log:
        server = forked_task.spawn(str(directory / 'socket'), log)
    os.environ[forked_task.ENVIRONMENT_VARIABLE] = str(directory / 'socket')
    yield str(directory / 'socket')
    del os.environ[forked_task.ENVIRONMENT_VARIABLE]
    server.terminate()
    server.wait(timeout=30)

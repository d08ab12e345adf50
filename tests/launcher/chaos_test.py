"""Chaos's clock: faults start from the job's first step, so a slow start (busy cores) does not
use up the time they have."""
import threading
import time

from tests import testing
from tfhp.launcher import chaos


class _Injector:
    """Records the faults asked of it; `progress_path` is the job's progress log."""

    def __init__(self, progress_path):
        self.progress_path = progress_path
        self.injected = []

    def inject(self, kind, task, for_s, factor):
        self.injected.append((kind, task, for_s, factor))
        return True


def test_the_faults_time_counts_from_the_first_step_not_the_start(tmp_path):
    progress = tmp_path / 'progress'
    injector = _Injector(str(progress))
    # 0.3 s of faults, the first 0.05 s after the first step, which comes 0.6 s after the start.
    with chaos.Chaos(injector, [('worker', 0)], ['kill'], (0.05, 0.05), (1, 1),
                     duration_s=0.3, count=1):
        first_step = threading.Timer(0.6, progress.write_text, args=['1 2.5\n'])
        first_step.start()
        testing.wait_for(lambda: injector.injected, timeout_s=5)
        first_step.join()
    assert injector.injected == [('kill', ('worker', 0), None, None)]


def test_no_fault_before_the_first_step_and_none_after_the_job(tmp_path):
    injector = _Injector(str(tmp_path / 'progress'))  # the job never steps
    with chaos.Chaos(injector, [('worker', 0)], ['kill'], (0.01, 0.01), (1, 1),
                     duration_s=0.1, count=1):
        time.sleep(0.4)
    time.sleep(0.3)  # the thread ended with the job: nothing comes later
    assert injector.injected == []

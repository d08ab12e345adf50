"""The fault study at its smallest: one fault, run as the script, its record written."""
import json
import os
import subprocess
import sys

import pytest

from experiments import common
from experiments import fault_bounds
from tfhp.cluster import liveness

pytestmark = [pytest.mark.cluster, pytest.mark.slow]


def test_a_mismatched_batch_ends_every_task_within_its_bound(tmp_path):
    result_file = tmp_path / 'faults.jsonl'
    # Long bounds: a task slow to start on a loaded machine must not be taken for a missing one.
    proc = subprocess.run(
        [sys.executable, '-m', 'experiments.fault_bounds', '--faults=mismatched_batch',
         '--peer_timeout_s=60', '--step_timeout_s=60', '--result_file=%s' % result_file],
        capture_output=True, text=True, timeout=600, cwd=common.REPO_ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (record,) = [json.loads(line) for line in result_file.read_text().splitlines()]
    assert record['fault'] == 'mismatched_batch' and record['bound_s'] == fault_bounds.MISMATCH_S
    # Both workers see the disagreement and exit 2; the ps ends by itself.
    assert record['exit_status']['worker 0'] == record['exit_status']['worker 1'] == 2
    assert record['exit_status']['ps 0'] is not None
    assert record['slowest_s'] == max(record['seconds_to_end'].values()) > 0
    # Counted from the last server's start (TensorFlow's import left out): two read periods.
    assert record['slowest_s'] < record['bound_s']
    # The first task's one line (the ps's): the workers it lost.
    assert 'worker task 1' in record['message']
    assert 'slowest s' in proc.stdout


def test_the_mismatch_bound_is_two_of_a_peers_read_periods_at_start_up():
    watch = liveness.PeerWatch('', [], start=False)
    assert fault_bounds.MISMATCH_S == 2 * watch.read_period_s() == 6.0

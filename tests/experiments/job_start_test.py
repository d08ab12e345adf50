"""The job-start study at its smallest: one job started by exec and one by fork."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_exec_and_fork_rows_and_only_the_exec_tasks_import(tmp_path):
    result_file = tmp_path / 'start.jsonl'
    proc = subprocess.run(
        [sys.executable, '-m', 'experiments.job_start', '--workers=1', '--repeats=1',
         '--steps=2', '--result_file=%s' % result_file],
        capture_output=True, text=True, timeout=300, cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = {r['start']: r for r in map(json.loads, result_file.read_text().splitlines())}
    assert sorted(rows) == ['exec', 'fork']
    for row in rows.values():
        assert row['num_workers'] == 1 and row['wall_time_s']['n'] == 1
        assert 0 < row['first_step_s']['median'] < row['wall_time_s']['median']
    # A fork's tfhp and TensorFlow were imported by the server before it forked.
    assert rows['fork']['import_s']['median'] < rows['exec']['import_s']['median'] / 2

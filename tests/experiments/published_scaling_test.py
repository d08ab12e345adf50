"""The published-scaling study run as the script on the test profile: a prediction per result."""
import json
import os
import subprocess
import sys

import pytest

from experiments import common
from experiments import published_scaling

PROFILE = os.path.join(common.REPO_ROOT, 'tests', 'data', 'resnet20_profile.json')


def test_each_resnet50_result_gets_its_prediction_and_the_worst_error(tmp_path):
    result_file = tmp_path / 'published.jsonl'
    proc = subprocess.run(
        # --inception3= (none): only resnet50's rows, on the test profile.
        [sys.executable, '-m', 'experiments.published_scaling', '--resnet50=%s' % PROFILE,
         '--inception3=', '--result_file=%s' % result_file], capture_output=True, text=True, timeout=300,
        cwd=common.REPO_ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = [json.loads(line) for line in result_file.read_text().splitlines()]
    published = [r for r in published_scaling.RESULTS if r.model == 'resnet50']
    assert [(r['system'], r['gpus']) for r in records] == [(r.system, r.gpus) for r in published]
    for record, result in zip(records, published):
        assert record['published_speedup'] == pytest.approx(result.speedup)
        assert record['error'] == pytest.approx(
            record['predicted_speedup'] / result.speedup - 1)
        assert record['step_ms'] >= record['compute_ms'] > 0
    worst = json.loads(proc.stdout.strip().splitlines()[-1])['max_abs_error']
    assert worst == max(abs(r['error']) for r in records)

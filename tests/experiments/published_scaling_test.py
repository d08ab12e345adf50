"""experiments.published_scaling: its verdict's fields on a small fixture, the page's ps counts
read literally, and one machine of a distributed run predicted from the page's inputs."""
import json
import os
import subprocess
import sys

import pytest

from experiments import common
from experiments import published_scaling
from experiments import tf_benchmarks_2017 as page
from tfhp.emulation import profile as profile_lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _record(gpus, published, predicted):
    return {'gpus': gpus, 'published_speedup': published, 'predicted_speedup': predicted,
            'error': predicted / published - 1, 'naive_error': gpus / published - 1,
            'published_efficiency': published / gpus}


def test_the_verdict_counts_points_and_averages_the_poor_ones():
    records = [_record(8, 7.8, 7.5),   # 97.5% efficient: not poor; -3.8%, within 10%
               _record(8, 6.0, 6.9),   # 75%: poor; +15%; the naive guess +33.3%
               _record(4, 3.5, 3.43)]  # 87.5%: poor; -2%; the naive guess +14.3%
    verdict = published_scaling.summary(records)
    assert verdict['points'] == 3 and verdict['within_10'] == 2
    assert verdict['poor_points'] == 2
    assert verdict['model_mae_poor'] == pytest.approx((0.15 + 0.02) / 2)
    assert verdict['naive_mae_poor'] == pytest.approx((8 / 6 - 1 + 4 / 3.5 - 1) / 2)


def test_the_ps_counts_are_read_literally_from_the_page():
    # Equal numbers of ps tasks and instances, but at 8 instances: InceptionV3 6,
    # ResNet-50 at batch 32 4, ResNet-152 4; so ResNet-50 at batch 64 had 8.
    assert page.distributed_ps('resnet50', 64, 8) == 8
    assert page.distributed_ps('resnet50', 32, 8) == 4
    assert page.distributed_ps('inception3', 64, 8) == 6
    assert page.distributed_ps('resnet152', 32, 4) == 4
    assert sum(len(figures) - 1 for *_, figures in page.POINTS) == 89


def test_one_machine_of_the_distributed_runs_is_predicted_under_its_gpu_count():
    layers = profile_lib.load(os.path.join(ROOT, 'experiments', 'profiles', 'resnet50.json'))
    (record,) = published_scaling.predict('ec2_distributed', 'resnet50', 32,
                                          {1: 48.4, 8: 333}, layers)
    # The 8 towers' gradients meet over PCIe and reach the ps on the same host through
    # loopback: the step is longer than one GPU's, and the speedup under 8.
    assert record['step_ms'] > 1000 * 32 / 48.4
    assert 6.0 < record['predicted_speedup'] < 8.0
    assert record['naive_error'] == pytest.approx(8 / (333 / 48.4) - 1)


def test_the_script_prints_every_point_and_its_verdict(tmp_path):
    result_file = tmp_path / 'published.jsonl'
    proc = subprocess.run(
        [sys.executable, '-m', 'experiments.published_scaling', '--models=resnet50',
         '--result_file=%s' % result_file], capture_output=True, text=True, timeout=300,
        cwd=common.REPO_ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = [json.loads(line) for line in result_file.read_text().splitlines()]
    # ResNet-50's columns: DGX-1, GCE and EC2 at batch 64 and 32 (3 points each), the
    # distributed runs at both batches (4 each).
    assert len(records) == 6 * 3 + 2 * 4
    for r in records:
        assert r['predicted_speedup'] <= r['gpus'] + 1e-9
        assert r['step_ms'] >= r['compute_ms'] > 0
    verdict = json.loads(proc.stdout.strip().splitlines()[-1])
    assert verdict == pytest.approx(published_scaling.summary(records))

"""The example study on the frame runs at its tiniest and writes real figures."""
import json
import os
import subprocess
import sys

from experiments import common


def test_one_row_once_writes_a_record_with_real_figures(tmp_path):
    result_file = tmp_path / 'example.jsonl'
    # --num_batches and --tf_random_seed: the old names, aliases of --steps and --seed.
    proc = subprocess.run(
        [sys.executable, '-m', 'experiments.example_study', '--models=trivial',
         '--batch_sizes=2', '--num_batches=2', '--warmup_steps=1', '--repeats=1',
         '--tf_random_seed=7', '--result_file=%s' % result_file],
        capture_output=True, text=True, timeout=300, cwd=common.REPO_ROOT,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (record,) = [json.loads(line) for line in result_file.read_text().splitlines()]
    assert (record['model'], record['batch_size'], record['seeds']) == ('trivial', 2, [7])
    images = record['images_per_sec']
    assert images['n'] == 1 and images['median'] > 0
    assert 'images/s' in proc.stdout

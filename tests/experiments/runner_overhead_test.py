"""The runner-overhead script at a tiny size, run as a script on the frame's flags (their old
names, aliases now): --repeats gives a summary of each figure."""
import json
import os
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_repeats_summarise_runner_bare_and_overhead(tmp_path):
    result_file = tmp_path / 'overhead.jsonl'
    proc = subprocess.run(
        [sys.executable, '-m', 'experiments.runner_overhead', '--models=trivial',
         '--bn_models=', '--batch_size=2', '--num_batches=2', '--repeats=2',
         '--tf_random_seed=9', '--result_file=%s' % result_file],
        capture_output=True, text=True, timeout=300, cwd=REPO,
        env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = [json.loads(line) for line in result_file.read_text().splitlines()]
    overhead = records[0]
    assert overhead['study'] == 'runner_overhead' and overhead['repeats'] == 2
    for key in ('runner_images_per_sec', 'bare_images_per_sec', 'overhead_pct'):
        assert overhead[key]['n'] == 2
    runner, bare = overhead['runner_images_per_sec'], overhead['bare_images_per_sec']
    assert overhead['overhead_pct']['values'] == [
        100.0 * (1.0 - r / b) for r, b in zip(runner['values'], bare['values'])]
    nhwc = next(r for r in records if r.get('data_format') == 'NHWC')
    assert nhwc['seeds'] == [9, 10] and nhwc['images_per_sec']['min'] > 0
    assert 'cells: median [min' in proc.stdout

"""experiments.compare_runs: records matched by their settings, figures counted identical, within
or beyond the tolerance, provenance left out."""
import json
import subprocess
import sys

from experiments import compare_runs


def test_records_are_matched_by_settings_and_their_figures_compared():
    old = [{'model': 'a', 'caption': 'x', 'steps': 2, 'ms': {'median': 10.0}, 'acc': 0.5},
           {'model': 'b', 'ms': {'median': 20.0}}]
    new = [{'model': 'b', 'ms': {'median': 40.0}},
           {'model': 'a', 'caption': 'y', 'steps': 2, 'ms': {'median': 11.0}, 'acc': 0.5},
           {'model': 'c', 'ms': {'median': 1.0}}]
    r = compare_runs.compare(old, new, tolerance=0.25)
    assert (r['old'], r['new'], r['matched']) == (2, 3, 2)
    # a: steps and acc identical, ms 10% off; b: ms doubled.
    assert (r['identical'], r['within']) == (2, 1)
    assert r['beyond'] == [({'model': 'b'}, 'ms', 20.0, 40.0)]


def test_the_command_prints_a_line_per_study(tmp_path):
    for name, ms in (('old', 10.0), ('new', 30.0)):
        (tmp_path / name).mkdir()
        (tmp_path / name / 'study.jsonl').write_text(json.dumps({'model': 'a', 'ms': ms}) + '\n')
    out = subprocess.run([sys.executable, '-m', 'experiments.compare_runs',
                          str(tmp_path / 'old'), str(tmp_path / 'new')],
                         capture_output=True, text=True, timeout=120, check=True).stdout
    assert json.loads(out.splitlines()[-1]) == {'study': 'study', 'old': 1, 'new': 1,
                                                'matched': 1, 'identical': 0, 'within': 0,
                                                'beyond': 1}
    assert 'model=a ms: 10 -> 30' in out

"""Chrome traces a viewer accepts, the RunMetadata beside them, and the `python -m tfhp.trace`
command."""
import json
import os
import subprocess
import sys

import pytest

from tests.profiling import conftest
from tfhp.config import paths
from tfhp.profiling import capture

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope='module')
def metadata():
    return conftest.traced_two_device_step('parameter_server')[1]


def _events(path):
    with open(path) as f:
        trace = json.load(f)  # valid JSON, or this raises
    return trace['traceEvents']


@pytest.mark.parametrize('show_memory', [False, True])
def test_chrome_trace_is_valid_json_with_complete_events(tmp_path, metadata, show_memory):
    path, metadata_path = capture.write_trace(metadata, str(tmp_path / 'step.json'),
                                              show_memory)
    events = _events(path)
    complete = [e for e in events if e['ph'] == 'X']
    for event in complete:
        assert {'name', 'ph', 'ts', 'dur', 'pid', 'tid'} <= set(event)
        assert event['dur'] >= 0
    processes = {e['pid']: e['args']['name'] for e in events
                 if e['ph'] == 'M' and e['name'] == 'process_name'}
    per_device = {processes[e['pid']] for e in complete}
    assert per_device == {'/job:localhost/replica:0/task:0/device:CPU:%d Compute' % i
                          for i in (0, 1)}
    # One complete event per op in the step stats.
    assert len(complete) == sum(len(d.node_stats) for d in metadata.step_stats.dev_stats)
    # Memory adds allocator counters ('C') and tensor objects.
    assert any(e['ph'] == 'C' for e in events) == show_memory
    assert capture.load_run_metadata(path) == metadata
    assert capture.load_run_metadata(metadata_path) == metadata


def test_load_names_the_path_it_cannot_read(tmp_path):
    chrome_only = tmp_path / 'other.json'
    chrome_only.write_text('{"traceEvents": []}')
    with pytest.raises(ValueError, match='other.json is a Chrome trace without'):
        capture.load_run_metadata(str(chrome_only))
    garbage = tmp_path / 'garbage.pb'
    garbage.write_bytes(b'\xff\xff\xff')
    with pytest.raises(ValueError, match='garbage.pb is not a RunMetadata'):
        capture.load_run_metadata(str(garbage))


def _trace_command(*args):
    return subprocess.run([sys.executable, '-m', 'tfhp.trace'] + list(args),
                          capture_output=True, text=True, timeout=120, cwd=ROOT)


def test_trace_command_prints_the_report_and_json(tmp_path, metadata):
    path = capture.write_trace(metadata, str(tmp_path / 'step.json'))[0]
    proc = _trace_command('--json', '--top_ops=3', path)
    assert proc.returncode == 0, proc.stderr
    figures = json.loads(proc.stdout)
    assert [d['device'] for d in figures['devices']] == ['CPU:0', 'CPU:1']
    assert len(figures['top_ops']) == 3
    missing = _trace_command(str(tmp_path / 'missing.json'))
    assert missing.returncode == 2
    assert 'missing.json' in missing.stderr and 'Traceback' not in missing.stderr


def test_output_path_check_knows_the_run_metadata_file():
    assert paths.RUN_METADATA_SUFFIX == capture.RUN_METADATA_SUFFIX

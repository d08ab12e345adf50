"""The transfer-cost probes move what they say between the two tasks, and the study runs."""
import json
import subprocess
import sys

import pytest
import tensorflow.compat.v1 as tf

from experiments import common
from experiments import transfer_costs


def _job(op):
    return tf.DeviceSpec.from_string(op.device).job


def _inputs(op):
    return [t.op for t in op.inputs] + list(op.control_inputs)


def _crossings(fetch):
    """{op: cross-task edges on the longest path of them ending at op} over the ancestors of
    `fetch` (a tensor or an op; data and control inputs)."""
    depth = {}

    def visit(op):
        if op not in depth:
            depth[op] = 0  # inputs come first in a graph without cycles
            depth[op] = max([visit(i) + (_job(i) != _job(op)) for i in _inputs(op)] or [0])
        return depth[op]
    visit(getattr(fetch, 'op', fetch))
    return depth


@pytest.mark.parametrize('probe, edges, longest', [
    ('local', 0, 0), ('concurrent', 4, 1), ('sequential', 4, 4), ('chunks', 4, 1),
    ('whole', 1, 1)])
def test_each_probe_crosses_between_the_tasks_as_its_doc_says(probe, edges, longest):
    with tf.Graph().as_default():
        probes = transfer_costs.build_probes(4, 8)
        op, transfers, num_bytes = probes[probe]
        depth = _crossings(op)
        crossing = sum(_job(i) != _job(o) for o in depth for i in _inputs(o))
    assert (crossing, max(depth.values())) == (edges, longest)
    assert transfers == max(edges, 1)
    assert num_bytes == {'chunks': 4 * 8 * 4, 'whole': 4 * 8 * 4}.get(probe, 0)


def test_the_study_reports_every_probe_with_its_figures(tmp_path):
    result = tmp_path / 'costs.jsonl'
    proc = subprocess.run(
        [sys.executable, '-m', 'experiments.transfer_costs', '--transfers=4',
         '--chunk_bytes=1024', '--steps=2', '--warmup_steps=1', '--repeats=1',
         '--result_file=%s' % result], capture_output=True, text=True, timeout=240,
        cwd=common.REPO_ROOT)
    assert proc.returncode == 0, proc.stderr[-2000:]
    records = {r['probe']: r for r in map(json.loads, result.read_text().splitlines())}
    assert sorted(records) == sorted(transfer_costs.PROBES)
    assert records['sequential']['transfers'] == 4 and records['chunks']['bytes'] == 4096
    assert all(r['cpu_ms']['median'] > 0 and r['wall_ms']['median'] > 0
               for r in records.values())
    assert records['concurrent']['cpu_ms_per_transfer'] is not None
    assert records['local']['cpu_ms_per_transfer'] is None
    assert records['whole']['cpu_ms_per_mb'] is not None


def test_a_chunk_size_that_is_not_whole_floats_is_refused():
    proc = subprocess.run([sys.executable, '-m', 'experiments.transfer_costs',
                           '--chunk_bytes=1023'], capture_output=True, text=True, timeout=120,
                          cwd=common.REPO_ROOT)
    assert proc.returncode != 0 and '--chunk_bytes must be a positive multiple of 4' in (
        proc.stderr + proc.stdout)

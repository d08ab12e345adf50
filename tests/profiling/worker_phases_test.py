"""Each worker's pull, compute and push read from its traced step, on hand-made step stats of two
workers of a ps job, and drawn."""
import importlib.util

import pytest
from tensorflow.core.framework import step_stats_pb2
from tensorflow.core.protobuf import config_pb2

from experiments.figures import phases
from tfhp.profiling import worker_phases

_PS = '/job:ps/replica:0/task:0/device:CPU:0'
_EPOCH_NS = 1795722000 * 10 ** 9  # step stats count from the epoch


def _worker(index):
    return '/job:worker/replica:0/task:%d/device:CPU:0' % index


def _recv(tensor, src, dst, start_ms, end_ms):
    label = '[1MB] [80Mb/s] edge_7_%s from %s to %s' % (tensor, src, dst)
    return dst, 'RecvTensor', label, start_ms, end_ms


def _trace(index, pull_end_ms, offset_ms=0.0):
    """A worker's step: its weights come at pull_end_ms, 40 ms of compute, then its gradient
    reaches the ps 30 ms later; beside them the transfers that are no phase of it."""
    me = _worker(index)
    t = lambda ms: offset_ms + ms  # noqa: E731
    nodes = [
        _recv('conv0/weights/Read/ReadVariableOp', _PS, me, t(1), t(pull_end_ms / 2)),
        _recv('dense0/weights/Read/ReadVariableOp', _PS, me, t(1), t(pull_end_ms)),
        # The global step's read and the step's last control message: not the pull.
        _recv('aggregate_1/Read_1/ReadVariableOp', _PS, me, t(0), t(pull_end_ms + 60)),
        _recv('job_control', _PS, me, t(pull_end_ms + 90), t(pull_end_ms + 95)),
        (me, 'tower_0/forward/forward_wait', 'PyFunc', t(pull_end_ms), t(pull_end_ms + 10)),
        (me, 'tower_0/backward/gradients/x_grad/backward_wait', 'PyFunc', t(pull_end_ms + 10),
         t(pull_end_ms + 40)),
        _recv('tower_0/backward/Identity_3', me, _PS, t(pull_end_ms + 30),
              t(pull_end_ms + 70)),
        _recv('aggregate_1/AssignAddVariableOp', me, _PS, t(pull_end_ms + 70),
              t(pull_end_ms + 80))]
    metadata = config_pb2.RunMetadata()
    for device, name, label, start_ms, end_ms in nodes:
        dev_stats = metadata.step_stats.dev_stats.add(device=device)
        dev_stats.node_stats.add(
            node_name=name, timeline_label=label if ' ' in label else '%s = %s()' % (name, label),
            all_start_nanos=_EPOCH_NS + int(start_ms * 1e6),
            all_end_rel_nanos=int((end_ms - start_ms) * 1e6))
    assert isinstance(metadata.step_stats, step_stats_pb2.StepStats)
    return metadata


def test_each_phase_spans_its_own_ops_and_the_workers_share_one_clock():
    spans = {'worker 0': worker_phases.read(_trace(0, pull_end_ms=200, offset_ms=5)),
             'worker 1': worker_phases.read(_trace(1, pull_end_ms=80))}
    rows = worker_phases.align(spans)
    # Ordered by when the pulls end; times from the first pull's start (worker 1's, at 1 ms).
    assert [r.task for r in rows] == ['worker 1', 'worker 0']
    early, late = rows
    assert early.pull == pytest.approx((0, 79))
    assert early.compute == pytest.approx((79, 119))
    assert early.push == pytest.approx((109, 149))
    assert early.busy == [pytest.approx((79, 119))]  # the waits follow each other: one
    assert late.pull == pytest.approx((5, 204))
    assert worker_phases.pull_spread_ms(rows) == pytest.approx(125)


def test_a_trace_without_a_phase_leaves_it_none():
    metadata = config_pb2.RunMetadata()
    dev_stats = metadata.step_stats.dev_stats.add(device=_worker(0))
    dev_stats.node_stats.add(node_name='tower_0/forward/conv', timeline_label='c = Conv2D()',
                             all_start_nanos=_EPOCH_NS, all_end_rel_nanos=10 ** 6)
    (row,) = worker_phases.align({'worker 0': worker_phases.read(metadata)})
    assert row.pull is None and row.push is None and row.compute == pytest.approx((0, 1))
    assert row.busy == [pytest.approx((0, 1))]
    assert worker_phases.pull_spread_ms([row]) is None


@pytest.mark.skipif(importlib.util.find_spec('matplotlib') is None,
                    reason="matplotlib is not installed (pip install -e '.[plots]')")
def test_the_phases_draw_a_row_per_worker_a_panel_per_job(tmp_path):
    rows = worker_phases.align({'worker %d' % i: worker_phases.read(_trace(i, 80 + 60 * i))
                                for i in range(3)})
    bars = lambda r: {'pull': [r.pull], 'compute': r.busy, 'push': [r.push]}  # noqa: E731
    panels = [('fifo queue', [(r.task, bars(r)) for r in rows]),
              ('fair queue', [(r.task, bars(r)) for r in rows[:2]])]
    for name in ('p.png', 'p.svg'):
        phases.draw(str(tmp_path / name), panels, worker_phases.PHASES, title='t',
                    caption='the caption')
    svg = (tmp_path / 'p.svg').read_text()
    for text in ('fifo queue', 'fair queue', 'worker 2', 'pull', 'compute', 'push',
                 'the caption'):
        assert text in svg
    assert (tmp_path / 'p.png').read_bytes()[:4] == b'\x89PNG'

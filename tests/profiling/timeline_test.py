"""A traced step's timeline: ops sorted into rows, the overlap of the all-reduce with the
backward pass, and its figure; on hand-made traces of a bucketed and a single-pack step."""
import importlib.util

import pytest

from tfhp import plots
from tfhp.profiling import events
from tfhp.profiling import timeline

_BACKWARD = 'tower_0/backward/gradients/tower_0/forward/IdentityN_%d_grad/backward_wait'


def _op(name, op_type, start_ms, end_ms):
    return events.Op(name, op_type, 'worker:0/CPU:0', start_ms * 1e3, end_ms * 1e3, (),
                     events.stage_of(name, op_type), False, {})


def _step(buckets):
    """Forward waits 0-10 ms, backward waits 10-40 ms (three layers, 10 ms each); with buckets
    each layer's gradients are concatenated and all-reduced once its wait ends (the last
    bucket after the backward pass), the single pack all of them after the last wait; then
    ops in no row: the job's control collective and the apply."""
    ops = [_op('tower_0/forward/forward_wait', 'PyFunc', 0, 5),
           _op('tower_0/forward/forward_wait_1', 'PyFunc', 5, 10)]
    for layer in range(3):
        ops.append(_op(_BACKWARD % layer, 'PyFunc', 10 + 10 * layer, 20 + 10 * layer))
    ends = [20, 30, 40] if buckets else [40]
    for i, end in enumerate(ends):
        suffix = '_%d' % i if i else ''
        ops.append(_op('aggregate_1/concat' + suffix, 'ConcatV2', end, end + 0.5))
        ops.append(_op('aggregate_1/CollectiveReduceV2' + suffix, 'CollectiveReduceV2',
                       end + 0.5, end + 4))
    last = ends[-1] + 4
    ops.append(_op('CollectiveReduceV2', 'CollectiveReduceV2', last, last + 1))
    ops.append(_op('apply/update', 'ResourceApplyGradientDescent', last + 1, last + 2))
    return sorted(ops, key=lambda o: o.start)


def test_ops_go_to_their_rows_and_the_rest_is_left_out():
    rows = timeline.rows(_step(buckets=True))
    assert list(rows) == list(timeline.ROWS)
    assert rows[timeline.FORWARD] == [(0, 5), (5, 10)]
    assert rows[timeline.BACKWARD] == [(10, 20), (20, 30), (30, 40)]
    # Concat + reduce of each bucket (the scope is aggregate_1, as between graphs), not the
    # job's control collective.
    assert rows[timeline.ALL_REDUCE] == [(20, 20.5), (20.5, 24), (30, 30.5), (30.5, 34),
                                         (40, 40.5), (40.5, 44)]


def test_buckets_all_reduce_during_the_backward_pass_and_the_single_pack_after_it():
    buckets = timeline.overlap(_step(buckets=True))
    assert buckets.backward_end_ms == 40
    assert buckets.first_all_reduce_ms == 20 < buckets.backward_end_ms
    assert buckets.all_reduce_ms == pytest.approx(12)
    assert buckets.overlapped_ms == pytest.approx(8)  # the first two buckets, 4 ms each
    assert buckets.step_ms == pytest.approx(46)
    pack = timeline.overlap(_step(buckets=False))
    assert pack.first_all_reduce_ms == pack.backward_end_ms == 40
    assert pack.all_reduce_ms == pytest.approx(4)
    assert pack.overlapped_ms == 0
    assert pack.step_ms == pytest.approx(46)


def test_a_step_without_all_reduce_has_no_overlap():
    ops = [op for op in _step(buckets=True) if not op.name.startswith('aggregate')]
    figures = timeline.overlap(ops)
    assert figures.first_all_reduce_ms is None
    assert figures.all_reduce_ms == figures.overlapped_ms == 0


@pytest.mark.skipif(importlib.util.find_spec('matplotlib') is None,
                    reason="matplotlib is not installed (pip install -e '.[plots]')")
def test_the_two_steps_draw_as_stacked_timelines(tmp_path):
    steps = {b: _step(buckets=b) for b in (True, False)}
    panels = [(name, timeline.rows(steps[b])) for name, b in (('buckets', True),
                                                              ('one pack', False))]
    marks = {'last backward wait ends': [timeline.overlap(steps[b]).backward_end_ms
                                         for b in (True, False)]}
    for name in ('t.png', 't.svg'):
        plots.step_timelines(str(tmp_path / name), panels, timeline.ROWS, marks, title='t',
                             caption='the caption')
    svg = (tmp_path / 't.svg').read_text()
    for text in ('buckets', 'one pack', 'backward wait', 'all-reduce',
                 'last backward wait ends', 'the caption'):
        assert text in svg
    assert (tmp_path / 't.png').read_bytes()[:4] == b'\x89PNG'

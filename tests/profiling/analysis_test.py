"""The analyser on a hand-made step whose every figure is known, and on GPU-tracer events.

The step (microseconds; CPU:1 sends f and h to CPU:0):

  CPU:0  a tower_0/forward [0,10)  b tower_0/backward [10,30)  g tower_0/input [25,35)
         c aggregate [30,35) = AddN(b, f)     d apply [40,50) = Apply(c, h)
  CPU:1  e tower_1/forward [0,20)  f tower_1/backward [20,24)  h tower_1/backward [36,38)
"""
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tests.pipelines import shapes
from tfhp.runner import benchmark

from tfhp.profiling import analysis
from tfhp.profiling import capture
from tfhp.profiling import events
from tfhp.profiling import report

CPU0 = '/job:localhost/replica:0/task:0/device:CPU:0'
CPU1 = '/job:localhost/replica:0/task:0/device:CPU:1'
GPU0 = '/job:localhost/replica:0/task:0/device:GPU:0'

# name, op type, start, end, data inputs as in the executed graph, output bytes
STEP = {
    CPU0: [('tower_0/forward/a', 'MatMul', 0, 10, [], 0),
           ('tower_0/backward/b', 'MatMul', 10, 30, ['tower_0/forward/a'], 0),
           ('tower_0/input/g', 'Identity', 25, 35, [], 0),
           ('aggregate/c', 'AddN', 30, 35, ['tower_0/backward/b', 'f/_1'], 0),
           ('apply/d', 'Apply', 40, 50, ['aggregate/c', 'h/_3'], 0)],
    CPU1: [('tower_1/forward/e', 'MatMul', 0, 20, [], 0),
           ('tower_1/backward/f', 'MatMul', 20, 24, ['tower_1/forward/e'], 400),
           ('tower_1/backward/h', 'Sum', 36, 38, ['tower_1/backward/f'], 100)],
}
SENT = [('f', 'tower_1/backward/f'), ('h', 'tower_1/backward/h')]


def _node(name, op, inputs=(), **attrs):
    node = tf.NodeDef(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        node.attr[key].s = value.encode()
    return node


def _run_metadata(step=STEP, sent=SENT):
    metadata = tf.RunMetadata()
    for device, ops in step.items():
        dev_stats = metadata.step_stats.dev_stats.add(device=device)
        for name, op_type, start, end, inputs, num_bytes in ops:
            stats = dev_stats.node_stats.add(
                node_name=name, all_start_micros=start, all_end_rel_micros=end - start,
                timeline_label='%s = %s(%s)' % (name, op_type, ', '.join(inputs)))
            if num_bytes:
                out = stats.output.add(slot=0)
                out.tensor_description.allocation_description.requested_bytes = num_bytes
    graphs = {d: metadata.partition_graphs.add() for d in step
              if not events.is_gpu_trace_device(d)}
    for k, (short, producer) in enumerate(sent):
        edge = dict(tensor_name='edge_%s' % short, send_device=CPU1, recv_device=CPU0)
        graphs[CPU1].node.append(_node('%s/_%d' % (short, 2 * k), '_Send', [producer], **edge))
        graphs[CPU0].node.append(_node('%s/_%d' % (short, 2 * k + 1), '_Recv', **edge))
    for device, graph in graphs.items():
        for name, op_type, _, _, inputs, _ in step[device]:
            graph.node.append(_node(name, op_type, inputs))
    return metadata


@pytest.fixture(scope='module')
def step():
    return analysis.analyze(_run_metadata(), top=3)


def test_busy_idle_and_stage_times(step):
    assert step.step_time == 50.0
    cpu0, cpu1 = step.devices
    assert (cpu0.device, cpu0.busy, cpu0.idle, cpu0.num_ops) == ('CPU:0', 45.0, 5.0, 5)
    assert (cpu1.device, cpu1.busy, cpu1.idle, cpu1.num_ops) == ('CPU:1', 26.0, 24.0, 3)
    # b and g share [25,30), g and c share [30,35).
    expected = {'forward': 10.0, 'backward': 17.5, 'input': 5.0, 'aggregate': 2.5,
                'apply': 10.0}
    assert {k: v for k, v in cpu0.stages.items() if v} == pytest.approx(expected, abs=1e-9)
    assert {k: v for k, v in cpu1.stages.items() if v} == {'forward': 20.0, 'backward': 6.0}
    for device in step.devices:
        assert sum(device.stages.values()) == pytest.approx(device.busy, abs=1e-9)
    assert step.imbalance == pytest.approx(45.0 / 35.5 - 1.0)


def test_transfers_and_how_much_compute_hid(step):
    assert step.links == {'CPU:1->CPU:0': (2, 500)}
    # f: [24,30) while CPU:0 computes; h: [38,40) while nothing runs.
    assert step.transfer_time == pytest.approx(8.0)
    assert step.hidden_transfer_time == pytest.approx(6.0)
    assert step.overlap_percent == pytest.approx(75.0)
    # Some device was busy in [0,35), [36,38) and [40,50): 47 of the step's 50.
    assert step.overlap_efficiency == pytest.approx((45 + 26 - 47) / (45 + 26 - 45))


def test_critical_path_follows_the_last_finishing_inputs(step):
    path = [(s.device, s.stage, s.busy, s.wait, s.num_ops) for s in step.critical_path]
    assert path == [('CPU:1', 'forward', 20.0, 0.0, 1),
                    ('CPU:1', 'backward', 6.0, 12.0, 2),   # f, then h after a 12 us gap
                    ('CPU:0', 'apply', 10.0, 2.0, 1)]       # d waits for h's transfer
    assert sum(s.busy + s.wait for s in step.critical_path) == step.step_time


def test_top_ops_by_self_time(step):
    assert [(op.name, op.self_time) for op in step.top_ops] == [
        ('tower_1/forward/e', 20.0), ('tower_0/backward/b', 17.5), ('tower_0/forward/a', 10.0)]


def test_report_shows_the_figures(step):
    text = report.format_report(step)
    lines = text.splitlines()
    assert 'step 0.050 ms on 2 devices, imbalance 27% (busiest device above the mean)' in lines
    assert next(l for l in lines if l.startswith('CPU:0')).split()[1:3] == ['0.045', '0.005']
    assert next(l for l in lines if l.startswith('backward')).split()[1:] == [
        '0.018', '0.006', '0.024']
    assert 'overlap efficiency eta: 0.92' in lines
    # Every op of this step is under a stage: the report says so and names no op.
    assert 'outside every stage (other): 0.0% of the busy time, 0.000 ms' in lines
    assert not any('outside the stages of tfhp.ops.scopes' in l for l in lines)


def test_the_report_names_the_ops_of_no_stage_when_they_take_a_tenth():
    step = dict(STEP)
    # 10 us of CPU:1's time in an op under no stage scope, and 1 us in another.
    step[CPU1] = STEP[CPU1] + [('hand_built/reduce', 'Sum', 40, 50, [], 0),
                               ('hand_built/tiny', 'Identity', 50, 51, [], 0)]
    figures = analysis.analyze(_run_metadata(step), top=3)
    assert figures.devices[1].stages['other'] == 11.0
    assert figures.other_share == pytest.approx(11.0 / (45.0 + 37.0))
    assert [(op.name, op.self_time) for op in figures.other_ops] == [
        ('hand_built/reduce', 10.0), ('hand_built/tiny', 1.0)]
    lines = report.format_report(figures).splitlines()
    start = lines.index('outside every stage (other): 13.4% of the busy time, 0.011 ms')
    assert 'outside the stages of tfhp.ops.scopes' in lines[start + 1]
    assert lines[start + 2].split() == ['0.010', 'ms', 'CPU:1', 'hand_built/reduce', '(Sum)']
    assert lines[start + 3].split() == ['0.001', 'ms', 'CPU:1', 'hand_built/tiny', '(Identity)']
    # Below a tenth, the share is stated and no op is named.
    small = dict(STEP, **{CPU1: STEP[CPU1] + [('hand_built/tiny', 'Identity', 50, 51, [], 0)]})
    lines = report.format_report(analysis.analyze(_run_metadata(small))).splitlines()
    assert 'outside every stage (other): 1.4% of the busy time, 0.001 ms' in lines
    assert not any('outside the stages of tfhp.ops.scopes' in l for l in lines)


def test_without_partition_graphs_labels_still_give_data_dependencies():
    metadata = _run_metadata()
    del metadata.partition_graphs[:]
    step = analysis.analyze(metadata)
    assert step.links == {}
    assert step.devices[0].busy == 45.0
    # d's inputs are c and the unresolved receive 'h/_3': the path ends at c's chain.
    assert [s.stage for s in step.critical_path] == ['forward', 'backward', 'aggregate', 'apply']


def test_gpu_streams_memcpy_and_stream_all():
    step = {
        GPU0: [('tower_0/forward/conv', 'Conv2D', 0, 2, [], 0)],  # the launch, on the host
        GPU0 + '/stream:all': [('tower_0/forward/conv:Conv2D', 'k', 2, 12, [], 0)],
        GPU0 + '/stream:7': [('tower_0/forward/conv:Conv2D', 'k', 2, 12, [], 0)],
        GPU0 + '/memcpy': [('staging/get:MEMCPYHtoD', 'x', 0, 4, [], 0),
                           ('aggregate/copy:MEMCPYDtoD', 'x', 12, 14, [], 0)],
    }
    metadata = _run_metadata(step, sent=[])
    trace = events.parse(metadata)
    assert sorted((op.device, op.stage) for op in trace.ops) == [
        ('GPU:0', 'forward'), ('GPU:0/memcpy', 'communication'), ('GPU:0/memcpy', 'copy'),
        ('GPU:0/stream:7', 'forward')]
    figures = analysis.analyze(metadata)
    # The host-to-device copy [0,4) overlaps the launch [0,2) and the kernel [2,12); the
    # device-to-device copy [12,14) overlaps nothing.
    assert figures.transfer_time == 6.0
    assert figures.hidden_transfer_time == 4.0


def test_untraced_metadata_is_refused():
    with pytest.raises(ValueError, match='FULL_TRACE'):
        analysis.analyze(tf.RunMetadata())


def test_analysis_leaves_the_run_metadata_unchanged():
    metadata = _run_metadata()
    before = metadata.SerializeToString()
    analysis.analyze(metadata)
    assert metadata.SerializeToString() == before


def test_a_stage_scope_opened_twice_is_the_same_stage():
    # TensorFlow names a second `aggregate` scope `aggregate_1` (the collective manager's is,
    # between graphs): still the aggregate stage, not `other`.
    assert events.stage_of('aggregate_1/CollectiveReduceV2', 'CollectiveReduceV2') == 'aggregate'
    assert events.stage_of('tower_0/backward_2/gradients/MatMul', 'MatMul') == 'backward'
    assert events.stage_of('save_1/Const', 'Const') == events.OTHER
    assert events.stage_of('aggregate_x/add', 'AddV2') == events.OTHER


def _input_step(input_time, path, input_wait=0.0):
    """A 10 ms step on one device busy 8 ms, `input_time` of it in preprocessing."""
    stages = {'preprocess': input_time, 'forward': 2.0e3, 'backward': 6.0e3 - input_time}
    return analysis.StepAnalysis(
        step_time=10.0e3, stage_names=tuple(stages),
        devices=[analysis.DeviceFigures('CPU:0', 8.0e3, 2.0e3, stages, 9)],
        critical_path=path, links={}, transfer_time=0.0, hidden_transfer_time=0.0,
        overlap_efficiency=None, top_ops=[], input_wait=input_wait)


def test_the_report_names_input_only_where_the_trace_shows_it():
    compute_path = [analysis.PathSegment('CPU:0', 'forward', 2.0e3, 0.0, 3),
                    analysis.PathSegment('CPU:0', 'backward', 6.0e3, 0.0, 5)]
    # tf.data: the step blocked 4.2 ms in GetNext, on its critical path.
    waited = report.bound_lines(_input_step(
        0.0, [analysis.PathSegment('CPU:0', 'input', 4.2e3, 0.0, 1)] + compute_path, 4.2e3))
    assert waited[0].startswith('input: 0.0% of the busy time in input and preprocessing; '
                                '4.200 ms of the critical path; 4.200 ms waiting')
    assert waited[1] == 'Bound: input: the step waited for its input 42% of its time'
    # RecordInput: preprocessing shared the device (25% of its busy time), off the path.
    shared = _input_step(2.0e3, compute_path)
    assert shared.input_share == pytest.approx(0.25) and shared.path_input_time == 0.0
    assert report.bound_lines(shared)[1].startswith(
        'Bound: cannot tell from a trace: preprocessing took 25% of the busy time')
    assert report.bound_lines(_input_step(0.1e3, compute_path))[1].startswith(
        'Bound: compute, as far as the trace shows')


def test_a_tf_data_step_shows_its_get_next_wait(tmp_path):
    shapes.make_shapes(str(tmp_path))
    trace = str(tmp_path / 'step.json')
    cfg = testing.small_config(model='lenet', image_size=28, num_batches=2, data={
        'data_dir': str(tmp_path), 'use_datasets': True, 'staged_input': False},
                               profile={'trace_file': trace, 'trace_step': 2})
    benchmark.run(cfg, log=lambda _: None)
    step = analysis.analyze(capture.load_run_metadata(trace))
    assert 0.0 < step.input_wait < step.step_time

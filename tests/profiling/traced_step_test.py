"""A real traced step of a 2-device run, read back by the analyser."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp import session as session_lib
from tfhp.ops import scopes
from tfhp.profiling import analysis
from tfhp.profiling import events
from tfhp.profiling import intervals
from tfhp.profiling import report


def test_aggregation_and_copies_on_both_devices(two_device_step):
    variable_update, built, metadata = two_device_step
    trace = events.parse(metadata)
    aggregating = {op.device for op in trace.ops if op.stage == 'aggregate'}
    # The parameter server sums on its variable device; all-reduce runs on every tower.
    expected = {'CPU:0'} if variable_update == 'parameter_server' else {'CPU:0', 'CPU:1'}
    assert aggregating >= expected
    for graph in metadata.partition_graphs:
        types = {node.op for node in graph.node}
        assert {'_Send', '_Recv'} <= types, graph.node[0].device
    figures = analysis.analyze(metadata)
    assert set(figures.links) == {'CPU:0->CPU:1', 'CPU:1->CPU:0'}
    if variable_update == 'parameter_server':
        # Tower 1 sends each gradient to the parameter device once: every parameter, float32.
        assert figures.links['CPU:1->CPU:0'][1] == 4 * built.num_params
    assert figures.transfer_bytes > 4 * built.num_params


def test_stage_times_add_up_to_busy_time(two_device_step):
    _, _, metadata = two_device_step
    figures = analysis.analyze(metadata)
    assert [d.device for d in figures.devices] == ['CPU:0', 'CPU:1']
    by_name = {events.short_device(d.device): d for d in metadata.step_stats.dev_stats}
    for device in figures.devices:
        # Busy time recomputed straight from the proto: the union of op intervals, in ns.
        union = intervals.length([
            (s.all_start_nanos, s.all_start_nanos + s.all_end_rel_nanos)
            for s in by_name[device.device].node_stats]) / 1e3
        assert device.busy == pytest.approx(union, rel=1e-9)
        assert sum(device.stages.values()) == pytest.approx(device.busy, rel=0.01)
        assert device.busy + device.idle == pytest.approx(figures.step_time, rel=1e-9)
        assert device.stages['forward'] > 0 and device.stages['backward'] > 0
    assert figures.devices[0].stages['apply'] > 0


def test_critical_path_follows_the_order_of_the_stages(two_device_step):
    _, _, metadata = two_device_step
    figures = analysis.analyze(metadata)
    # Walking back from the last op can only go to earlier stages (or to ops of no stage, such
    # as a constant that happened to finish last), and the step ends with the update.
    order = ['input', 'forward', 'backward', 'aggregate', 'apply']
    ranks = [order.index(s.stage) for s in figures.critical_path if s.stage in order]
    assert ranks == sorted(ranks)
    assert ranks[-1] == order.index('apply')
    length = sum(s.busy + s.wait for s in figures.critical_path)
    assert 0 < length <= figures.step_time + 1e-6


def test_a_hand_built_op_outside_every_stage_is_named_in_the_report(two_device_step):
    _, _, metadata = two_device_step
    # tfhp's own step keeps almost all its time under the stages.
    assert analysis.analyze(metadata).other_share < report.SIGNIFICANT_OTHER_SHARE
    with tf.Graph().as_default():
        # Fed, not generated: how long a random op takes against a matmul depends on the CPU
        # (on an AMD EPYC a 500x500 RandomUniform outlasted each product), and constants would
        # be folded away before the run.
        with tf.name_scope(scopes.FORWARD):
            small = tf.placeholder(tf.float32, [32, 32])
            loss = tf.reduce_sum(tf.matmul(small, small))
        # As a hand-built graph might add it: under no stage's name scope.
        with tf.name_scope('hand_built'):
            big = tf.placeholder(tf.float32, [500, 500])
            product = big
            for _ in range(4):
                product = tf.matmul(product, big, name='slow_matmul')
        fetches = [loss, tf.reduce_sum(product)]
        rng = np.random.RandomState(2)
        feed = {small: rng.rand(32, 32), big: rng.rand(500, 500) / 500}
        with tf.Session() as sess:
            sess.run(fetches, feed)  # the first run builds the executor
            metadata = session_lib.run_traced(sess, fetches, feed)[1]
    figures = analysis.analyze(metadata)
    [device] = figures.devices
    assert figures.other_share == pytest.approx(device.stages['other'] / device.busy)
    assert figures.other_share > 0.5  # four 500x500 products against one 32x32
    assert figures.other_ops[0].name.startswith('hand_built/slow_matmul')
    assert figures.other_ops[0].self_time > 100  # microseconds
    lines = report.format_report(figures).splitlines()
    line = next(l for l in lines if l.startswith('outside every stage (other): '))
    assert float(line.split()[4].rstrip('%')) == pytest.approx(100 * figures.other_share,
                                                                abs=0.05)
    listed = lines[lines.index(line) + 2:lines.index(line) + 2 + report.OTHER_OPS_LISTED]
    assert sum('hand_built/slow_matmul' in l for l in listed) == 4

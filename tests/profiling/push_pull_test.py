"""A traced parameter-server step's timeline rows, on a hand-made RunMetadata: one worker's
compute, its pushes and pulls on the wire, the chief's applies, and a merged background lane."""
import pytest
import tensorflow.compat.v1 as tf

from tfhp.profiling import capture
from tfhp.profiling import push_pull

WORKER = '/job:worker/replica:0/task:%d/device:CPU:0'
PS = '/job:ps/replica:0/task:0/device:CPU:0'
T0 = 1_000_000  # microseconds since the epoch of the step's first op


def _metadata(lanes):
    """A RunMetadata of {device: [(node name, label, start ms, end ms)]}."""
    metadata = tf.RunMetadata()
    for device, nodes in lanes.items():
        stats = metadata.step_stats.dev_stats.add(device=device)
        for name, label, start, end in nodes:
            stats.node_stats.add(node_name=name, timeline_label=label,
                                 all_start_micros=T0 + int(start * 1e3),
                                 all_end_rel_micros=int((end - start) * 1e3))
    return metadata


def _receive(size, source, destination):
    return '[%s] [1.0Mb/s] edge_1_Identity from %s to %s' % (size, source, destination)


def _step(until_ms=None):
    """Worker 0: forward 0-5, backward 5-12 ms; two 0.5 MB pushes requested at 10 ms that
    arrive at 16 and 20, a 4-byte token and worker 1's push (both left out). The chief's
    applies and worker 0's pulls ran in background runs, merged as lanes of their own."""
    step = _metadata({
        WORKER % 0: [('tower_0/forward/conv0/Conv2D', '', 0, 5),
                     ('tower_0/backward/gradients/tower_0/forward/conv0/Conv2D_grad', '', 5, 12),
                     ('RecvTensor', _receive('8B', PS, WORKER % 0), 1, 2)],
        PS: [('RecvTensor', _receive('0.5MB', WORKER % 0, PS), 10, 16),
             ('RecvTensor', _receive('0.5MB', WORKER % 0, PS), 10, 20),
             ('RecvTensor', _receive('0.5MB', WORKER % 1, PS), 10, 18)]})
    chief = _metadata({PS: [('apply_1/update_w/ResourceApplyGradientDescent', '', 16, 17),
                            ('apply_1/update_w/Identity', '', 17, 18)]})
    pulls = _metadata({WORKER % 0: [('RecvTensor', _receive('0.5MB', PS, WORKER % 0), 17, 21),
                                    ('RecvTensor', _receive('512KB', PS, WORKER % 0), 17, 25)]})
    late = _metadata({PS: [('apply_2/update_w/ResourceApplyGradientDescent', '', 500, 501)]})
    return capture.with_background(step, [('apply', chief), ('pulls', pulls), ('next', late)],
                                   None if until_ms is None else T0 + until_ms * 1e3)


def test_each_op_goes_to_its_row_and_transfers_are_drawn_on_the_wire():
    rows = push_pull.rows(_step())
    assert list(rows) == list(push_pull.ROWS)
    assert rows[push_pull.FORWARD] == [(0, 5)]
    assert rows[push_pull.BACKWARD] == [(5, 12)]
    # Requested together at 10 ms: the second is on the wire from the first's arrival.
    assert rows[push_pull.PUSH] == [(10, 16), (16, 20)]
    assert rows[push_pull.APPLY] == [(16, 17)]  # a run that does not overlap the step: left out
    assert rows[push_pull.PULL] == [(17, 21), (21, 25)]
    assert push_pull.rows(_step(), worker=1)[push_pull.PUSH] == [(10, 18)]


def test_the_work_a_step_leaves_beside_it_is_merged_until_it_settled():
    # Priority pushes: the step ends once its gradients are queued; its pushes and applies
    # go on until the worker settled it (here at 600 ms).
    assert push_pull.rows(_step(until_ms=600))[push_pull.APPLY] == [(16, 17), (500, 501)]
    assert push_pull.rows(_step(until_ms=10))[push_pull.APPLY] == [(16, 17)]  # never shorter


def test_merged_lanes_are_named_after_their_loop():
    devices = [d.device for d in _step().step_stats.dev_stats]
    assert devices == [WORKER % 0, PS, PS + ' [apply]', WORKER % 0 + ' [pulls]']


@pytest.mark.parametrize('label, expected', [
    (_receive('0.5MB', WORKER % 0, PS), (1 << 19, ('worker', 0), ('ps', 0))),
    (_receive('8B', PS, WORKER % 2), (8, ('ps', 0), ('worker', 2))),
    ('edge_1_x = Identity(y)', None),
])
def test_a_receive_label_gives_its_bytes_and_tasks(label, expected):
    assert push_pull.received(label) == expected

"""All-gather: every device gets every device's payload, along the ring, star and hierarchical
topologies; payloads that cannot be summed ride the all-reduce algorithms through it."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp import compression
from tfhp import session as session_lib
from tfhp.ops import allgather
from tfhp.ops import allreduce
from tfhp.ops import allreduce_builder
from tfhp.ops import collective
from tfhp.ops import ring

DEVICES = ['/cpu:%d' % i for i in range(4)]


def _index(device):
    return tf.DeviceSpec.from_string(device).device_index


def _payloads():
    """Device d's payload: two tensors of two dtypes, [d, d, d] and 10 d + 0.5."""
    payloads = []
    for d, device in enumerate(DEVICES):
        with tf.device(device):
            payloads.append((tf.fill([3], d), tf.constant(10.0 * d + 0.5)))
    return payloads


def _source(tensor):
    """The device a received tensor was copied from (the input of its Identity)."""
    assert tensor.op.type == 'Identity'
    return _index(tensor.op.inputs[0].device)


GATHERS = {
    'ring': lambda p: allgather.ring(p, DEVICES),
    'star': lambda p: allgather.star(p, DEVICES, '/cpu:0'),
    'hierarchical': lambda p: allgather.hierarchical(p, DEVICES, [[0, 1], [2, 3]]),
    'uneven_groups': lambda p: allgather.hierarchical(p, DEVICES, [[0], [1, 2, 3]],
                                                      outer=lambda b, d: allgather.star(
                                                          b, d, d[0])),
}
# SOURCES[name][d][s]: the device that device d receives sender s's payload from.
SOURCES = {
    'ring': {d: {s: (d - 1) % 4 for s in range(4)} for d in range(4)},
    'star': {d: {s: 0 if d else s for s in range(4)} for d in range(4)},
    # Leaders 0 and 2: each gets its member's payload from it, the other group's from the
    # other leader; members get everything from their leader.
    'hierarchical': {0: {1: 1, 2: 2, 3: 2}, 1: {0: 0, 2: 0, 3: 0},
                     2: {0: 0, 1: 0, 3: 3}, 3: {0: 2, 1: 2, 2: 2}},
    # Leaders 0 (alone) and 1; the leaders' bundles meet through a star on 0.
    'uneven_groups': {0: {1: 1, 2: 1, 3: 1}, 1: {0: 0, 2: 2, 3: 3},
                      2: {0: 1, 1: 1, 3: 1}, 3: {0: 1, 1: 1, 2: 1}},
}


@pytest.mark.parametrize('name', sorted(GATHERS))
def test_every_device_gets_every_payload_along_the_topology(name):
    with tf.Graph().as_default():
        payloads = _payloads()
        gathered = GATHERS[name](payloads)
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=4)) as sess:
            got = sess.run(gathered)
    for d in range(4):
        for s in range(4):
            ints, floats = got[d][s]
            np.testing.assert_array_equal(ints, [s, s, s])
            assert floats == 10.0 * s + 0.5
            tensors = gathered[d][s]
            assert all(_index(t.device) == d for t in tensors)
            if s == d:
                assert tensors == payloads[d]  # its own: no copy
            else:
                assert {_source(t) for t in tensors} == {SOURCES[name][d][s]}, (d, s)


def test_hierarchical_groups_must_cover_the_devices_once():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='must cover the 4 devices once'):
            allgather.hierarchical(_payloads(), DEVICES, [[0, 1], [1, 2, 3]])


def _mean_magnitude_signs(values):
    return sum(np.abs(v).mean() * np.where(v >= 0, 1.0, -1.0) for v in values)


ALGORITHMS = {
    'pscpu': lambda: allreduce.CopyToDevice(['/cpu:0']),
    'psgpu#2': lambda: allreduce.CopyToDevice(DEVICES, shards=2),
    'xring#2': lambda: ring.Ring(num_rings=2),
    'hierarchical_copy': lambda: allreduce.Hierarchical(allreduce.CopyToDevice(),
                                                        allreduce.CopyToDevice(), group_size=2),
    'xring/xring': lambda: allreduce.Hierarchical(ring.Ring(), ring.Ring(), group_size=2),
    'spec': lambda: allreduce_builder.from_spec('pscpu:16:xring', DEVICES, '/cpu:0'),
}


@pytest.mark.parametrize('name', sorted(ALGORITHMS))
def test_a_sign_payload_is_gathered_and_every_device_adds_the_same_decompressed_sum(name):
    rng = np.random.RandomState(4)
    values = [rng.normal(size=(5, 7)).astype(np.float32) for _ in DEVICES]
    with tf.Graph().as_default() as graph:
        # Fed, not constants: constant folding would compute some payloads at build time, in
        # another summation order than the kernels (last-bit differences).
        tensors = []
        for device in DEVICES:
            with tf.device(device):
                tensors.append(tf.placeholder(tf.float32, [5, 7]))
        outputs = allreduce.Compressed(ALGORITHMS[name](),
                                       compression.get('sign_noef'))(tensors, DEVICES)
        # Only payloads cross between devices: packed bits and scales, nothing dense.
        crossing = {t.dtype for op in graph.get_operations() if op.type == 'Identity'
                    for t in op.inputs if t.op.device and t.op.device != op.device}
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=4)) as sess:
            got = sess.run(outputs, dict(zip(tensors, values)))
    assert crossing == {tf.uint8, tf.float32}
    for d, result in enumerate(got):
        assert outputs[d].device.endswith('CPU:%d' % d)
        np.testing.assert_allclose(result, _mean_magnitude_signs(values), rtol=1e-5)
        np.testing.assert_array_equal(result, got[0])


def test_an_algorithm_without_an_all_gather_refuses_a_payload_it_cannot_sum():
    with tf.Graph().as_default():
        tensors = [tf.zeros([4]), tf.zeros([4])]
        with pytest.raises(ValueError, match='CollectiveAllReduce cannot carry payloads'):
            allreduce.Compressed(collective.CollectiveAllReduce(),
                                 compression.get('topk'))(tensors, DEVICES[:2])

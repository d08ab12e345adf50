"""Every all-reduce algorithm returns the exact sum, bitwise equal on every device."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp.runner import devices as devices_lib
from tfhp import session as session_lib
from tfhp.compression import cast
from tfhp.ops import allreduce
from tfhp.ops import allreduce_builder
from tfhp.ops import allreduce_spec
from tfhp.ops import collective
from tfhp.ops import nccl
from tfhp.ops import ring

# Odd sizes: fewer elements than devices, primes, a 2-D shape, one not divisible by any N.
SHAPES = [(1,), (7,), (3, 11), (1001,)]

ALGORITHMS = {
    'copy_to_cpu': lambda devs: allreduce.CopyToDevice(['/cpu:0']),
    'pscpu#2': lambda devs: allreduce.CopyToDevice(['/cpu:0'], shards=2),
    'psgpu#3': lambda devs: allreduce.CopyToDevice(devs, shards=3),
    'ring': lambda devs: ring.Ring(),
    'ring#2': lambda devs: ring.Ring(num_rings=2),
    'hierarchical': lambda devs: allreduce.Hierarchical(allreduce.CopyToDevice(), ring.Ring(),
                                                        group_size=2),
    'by_worker': lambda devs: allreduce.Hierarchical(ring.Ring(), allreduce.CopyToDevice()),
    'by_size': lambda devs: allreduce.BySize([(8, allreduce.CopyToDevice()),
                                              (None, ring.Ring())]),
    'collective': lambda devs: collective.CollectiveAllReduce(),
    'spec': lambda devs: allreduce_builder.from_spec('pscpu:16:psgpu#2:64:xring#2', devs,
                                                     '/cpu:0'),
}


def _inputs(num_devices, shape, seed):
    # Positive values: no cancellation, so float32 sums of <= 8 terms are within 1e-6
    # relative of the exact (float64) sum.
    rng = np.random.RandomState(seed)
    return [rng.uniform(0.5, 1.5, shape).astype(np.float32) for _ in range(num_devices)]


@pytest.mark.parametrize('num_devices', [1, 2, 3, 4, 8])
def test_every_algorithm_sums_exactly_on_every_device(num_devices):
    devs = ['/cpu:%d' % i for i in range(num_devices)]
    cases = []
    with tf.Graph().as_default() as graph:
        for name, make in sorted(ALGORITHMS.items()):
            algorithm = make(devs)
            for s, shape in enumerate(SHAPES):
                values = _inputs(num_devices, shape, seed=s)
                tensors = []
                for value, device in zip(values, devs):
                    with tf.device(device):
                        tensors.append(tf.constant(value))
                outputs = algorithm(tensors, devs)
                assert [o.device for o in outputs] == [
                    tf.DeviceSpec.from_string(d).to_string() for d in devs]
                cases.append((name, shape, values, outputs))
        graph.finalize()
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=num_devices)) as sess:
            results = sess.run([outputs for _, _, _, outputs in cases])
    for (name, shape, values, _), got in zip(cases, results):
        expected = np.sum(np.array(values, np.float64), axis=0)
        assert len(got) == num_devices
        for device_result in got:
            assert device_result.shape == shape and device_result.dtype == np.float32, name
            np.testing.assert_allclose(device_result, expected, rtol=1e-6, err_msg=name)
            np.testing.assert_array_equal(device_result, got[0], err_msg=name)


@pytest.mark.parametrize('dtype, rtol', [(tf.float16, 2e-3), (tf.bfloat16, 1e-2)])
def test_compressed_by_a_cast_reduces_in_the_narrow_dtype_and_returns_float32(dtype, rtol):
    devs = ['/cpu:0', '/cpu:1', '/cpu:2']
    values = _inputs(3, (5, 7), seed=3)
    with tf.Graph().as_default():
        tensors = []
        for value, device in zip(values, devs):
            with tf.device(device):
                tensors.append(tf.constant(value))
        outputs = allreduce.Compressed(ring.Ring(), cast.Cast(dtype.name))(tensors, devs)
        narrow = [op for op in tf.get_default_graph().get_operations()
                  if op.type == 'AddV2' and op.outputs[0].dtype == dtype]
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=3)) as sess:
            got = sess.run(outputs)
    assert narrow, 'the ring adds ran in float32'
    expected = np.sum(values, axis=0)
    for device_result in got:
        assert device_result.dtype == np.float32
        np.testing.assert_allclose(device_result, expected, rtol=rtol)


def test_by_size_routes_on_element_count():
    devs = ['/cpu:0', '/cpu:1']
    algorithm = allreduce_builder.from_spec('pscpu:8:xring', devs, '/cpu:0')
    with tf.Graph().as_default() as graph:
        for size in (8, 9):
            with tf.name_scope('size_%d' % size):
                algorithm([tf.zeros([size]), tf.zeros([size])], devs)
        ring_ops = {op.name.split('/')[0] for op in graph.get_operations()
                    if '/ring/' in op.name}
    assert ring_ops == {'size_9'}


def test_mismatched_inputs_are_refused():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='one tensor per device'):
            ring.Ring()([tf.zeros([2])], ['/cpu:0', '/cpu:1'])
        with pytest.raises(ValueError, match='differ'):
            ring.Ring()([tf.zeros([2]), tf.zeros([3])], ['/cpu:0', '/cpu:1'])


def test_nccl_refuses_cpu_devices_by_name():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='GPUs only; got /cpu:0, /cpu:1'):
            nccl.NcclAllSum()([tf.zeros([2]), tf.zeros([2])], ['/cpu:0', '/cpu:1'])


def test_nccl_builds_one_shared_all_reduce_per_call():
    devs = ['/gpu:0', '/gpu:1']
    with tf.Graph().as_default() as graph:
        algorithm = nccl.NcclAllSum()
        for _ in range(2):
            algorithm([tf.zeros([3]), tf.zeros([3])], devs)
        ops = [op for op in graph.get_operations() if op.type == 'NcclAllReduce']
    assert [op.device for op in ops] == ['/device:GPU:0', '/device:GPU:1'] * 2
    names = [op.get_attr('shared_name') for op in ops]
    assert names[0] == names[1] != names[2] == names[3]
    assert all(op.get_attr('num_devices') == 2 for op in ops)


def test_nccl_sums_on_gpus():
    num_gpus = devices_lib.num_gpus()
    if num_gpus < 2:
        pytest.skip('needs 2 GPUs (one GPU has nothing to reduce)')
    devs = ['/gpu:%d' % i for i in range(num_gpus)]
    values = _inputs(num_gpus, (1001,), seed=5)
    with tf.Graph().as_default():
        tensors = []
        for value, device in zip(values, devs):
            with tf.device(device):
                tensors.append(tf.constant(value))
        outputs = nccl.NcclAllSum()(tensors, devs)
        with tf.Session() as sess:
            got = sess.run(outputs)
    for device_result in got:
        np.testing.assert_allclose(device_result, np.sum(values, axis=0), rtol=1e-6)


def test_the_table_says_which_algorithms_have_an_all_gather():
    # The config refuses a payload that cannot be summed on an algorithm without one; each
    # row must say what its class does.
    for name, algorithm in allreduce_spec.ALGORITHMS.items():
        built = allreduce_builder.from_spec(name, ['/cpu:0', '/cpu:1'], '/cpu:0')
        has_one = type(built).all_gather is not allreduce.AllReduce.all_gather
        assert algorithm.gathers == has_one, name
    assert allreduce_spec.without_all_gather('pscpu:32k:nccl/xring') == ['nccl']
    assert allreduce_spec.without_all_gather('xring') == []

"""Parameter-server placement: greedy by bytes keeps device loads within one largest variable."""
import pytest
import tensorflow.compat.v1 as tf

from tfhp import config as config_lib
from tfhp import replication
from tfhp import topology as topology_lib
from tfhp.runner import tower
from tfhp.models import registry


def _manager(num_devices):
    devices = tuple('/cpu:%d' % i for i in range(num_devices))
    topology = topology_lib.Topology(tower_devices=devices, variable_devices=devices)
    return replication.make_variable_manager(config_lib.ReplicationConfig(), topology)


def _bytes(variable):
    return variable.shape.num_elements() * variable.dtype.base_dtype.size


def test_greedy_places_each_variable_on_the_least_loaded_device():
    manager = _manager(3)
    with tf.Graph().as_default():
        with manager.tower_scope(0):
            for i, size in enumerate([100, 60, 50, 30, 20]):
                tf.get_variable('v%d' % i, [size])
        devices = [v.device for v in tf.global_variables()]
    # 100 -> d0; 60 -> d1; 50 -> d2; 30 -> d2 (50 < 60); 20 -> d1 (60 < 80).
    assert [d[-1] for d in devices] == ['0', '1', '2', '2', '1']
    assert manager.placer.loads == [400, 320, 320]


@pytest.mark.parametrize('model, num_devices', [('resnet50', 3), ('inception3', 4)])
def test_loads_of_a_real_model_are_within_one_largest_variable(model, num_devices):
    manager = _manager(num_devices)
    spec = registry.get(model)
    model_fn = tower.make_model_fn(spec, 1000)
    with tf.Graph().as_default():
        images = tf.zeros([1, spec.image_size, spec.image_size, 3])
        with manager.tower_scope(0):
            model_fn(images, tf.zeros([1], tf.int32))
        variables = tf.global_variables()
        loads = manager.placer.loads
        assert sum(loads) == sum(_bytes(v) for v in variables)
        for device_index, device in enumerate(manager.placer.devices):
            placed = [v for v in variables
                      if tf.DeviceSpec.from_string(v.device).device_index == device_index]
            assert sum(_bytes(v) for v in placed) == loads[device_index], device
        assert max(loads) - min(loads) <= max(_bytes(v) for v in variables)
        assert min(loads) > 0

"""Parameter server: one master copy of each variable, gradients summed, one apply per step.

Variables are created on `variable_devices` (greedy by bytes when there are several); each tower
reads them through implicit copies, which TensorFlow inserts where a tower's op on another
device consumes a variable.
"""
import contextlib

import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.replication import base
from tfhp.replication import device_setters


class ParameterServer(base.VariableManager):
    """Variables on the parameter devices, shared by every tower.

    Args:
      tower_devices: device of each tower.
      variable_devices: devices that hold variables (e.g. ('/cpu:0',)).
    """

    def __init__(self, tower_devices, variable_devices):
        self._tower_devices = tuple(tower_devices)
        self._placer = device_setters.GreedyByBytes(variable_devices)

    @property
    def placer(self):
        """The `GreedyByBytes` placer (its `loads` show the bytes per device)."""
        return self._placer

    @contextlib.contextmanager
    def tower_scope(self, tower):
        setter = device_setters.variables_on(self._placer, self._tower_devices[tower])
        with tf.device(setter), tf.variable_scope(tf.get_variable_scope(),
                                                  reuse=tower > 0):
            yield

    def trainable_variables(self, tower):
        del tower  # every tower shares the same variables
        return tf.trainable_variables()

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        num_towers = len(tower_grads)
        grads_and_vars = []
        with tf.name_scope(scopes.AGGREGATE):
            for per_var in zip(*tower_grads):
                var = per_var[0][1]
                with tf.device(var.device):
                    grads = [g for g, _ in per_var]
                    total = grads[0] if num_towers == 1 else tf.add_n(grads)
                    grads_and_vars.append((total / num_towers, var))
        with tf.name_scope(scopes.APPLY):
            train_op = optimizer_fn().apply_gradients(grads_and_vars, global_step=global_step)
        return base.Update(train_op=train_op, post_init_ops=[], hooks=[])

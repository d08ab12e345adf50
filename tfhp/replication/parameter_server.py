"""Parameter server: one master copy of each variable, gradients summed, one apply per step.

Variables are created on `variable_devices` (greedy by bytes when there are several); each tower
reads them through implicit copies, which TensorFlow inserts where a tower's op on another
device consumes a variable. With `staged_vars` those reads go through staging areas instead
(`tfhp.replication.staged_vars`: hidden copies, one-step-stale weights). With a compressor each
tower sends its gradient compressed (`tfhp.replication.transfer`): compressed on the tower's
device, decompressed on the variable's, where the towers' gradients are meaned.
"""
import contextlib

import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.replication import base
from tfhp.replication import device_setters
from tfhp.replication import staged_vars as staged_vars_lib
from tfhp.replication import transfer


class ParameterServer(base.VariableManager):
    """Variables on the parameter devices, shared by every tower.

    Args:
      tower_devices: device of each tower.
      variable_devices: devices that hold variables (e.g. ('/cpu:0',)).
      staged_vars: read trainable variables through per-tower staging areas (refilled from
        one read per variable on caching_device, if given).
      caching_device: read each variable once per step onto this device, for every use (a
        between-graph worker's CPU). Without it every use reads anew: the forward pass and the
        L2 term each fetched a ps variable, twice the bytes (measured with null_dense: 39.5 MB
        received per worker step for 16.8 MB of weights).
      compressor: the `tfhp.compression` scheme each tower's gradient is sent to the
        parameter device in (None: as it is).
    """

    def __init__(self, tower_devices, variable_devices, staged_vars=False,
                 caching_device=None, compressor=None):
        self._tower_devices = tuple(tower_devices)
        self._compressor = compressor
        self._placer = device_setters.GreedyByBytes(variable_devices)
        self._staged = staged_vars_lib.StagedReads(caching_device) if staged_vars else None
        self._caching_device = caching_device

    @property
    def placer(self):
        """The `GreedyByBytes` placer (its `loads` show the bytes per device)."""
        return self._placer

    @contextlib.contextmanager
    def tower_scope(self, tower):
        device = self._tower_devices[tower]
        setter = device_setters.variables_on(self._placer, device)
        getter = self._staged.custom_getter(tower, device) if self._staged else None
        with tf.device(setter), tf.variable_scope(tf.get_variable_scope(), reuse=tower > 0,
                                                  custom_getter=getter,
                                                  caching_device=self._caching_device):
            yield

    def trainable_variables(self, tower):
        if self._staged:
            return self._staged.reads(tower)
        return tf.trainable_variables()  # every tower shares the same variables

    def post_init_ops(self):
        """Primes the staged reads (one put per area); nothing without staged_vars."""
        return [tf.group(*self._staged.prime_ops(), name='prime_staged_vars')] if (
            self._staged) else []

    def shared_gradients(self, tower_grads):
        """Staged reads replaced by their variables, and the refills the update waits for."""
        if not self._staged:
            return tower_grads, []
        return ([[(g, self._staged.variable(read)) for g, read in tower] for tower in tower_grads],
                self._staged.refill_ops())

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        grads_and_vars = []
        tower_grads, puts = self.shared_gradients(tower_grads)
        with tf.name_scope(scopes.AGGREGATE):
            for per_var in zip(*tower_grads):
                if per_var[0][0] is None:
                    continue  # a variable the loss does not use
                var = per_var[0][1]
                received = [self._received(t, g, var) for t, (g, _) in enumerate(per_var)]
                with tf.device(var.device):
                    grads_and_vars.append((base.mean_gradient(received), var))
        # Staged puts read the variables before this step's update changes them.
        with tf.name_scope(scopes.APPLY), tf.control_dependencies(puts):
            train_op = optimizer_fn().apply_gradients(grads_and_vars, global_step=global_step)
        return base.Update(train_op=train_op, post_init_ops=self.post_init_ops(), hooks=[])

    def _received(self, tower, grad, var):
        """Tower `tower`'s gradient of `var` as var's device gets it: sent compressed from
        the tower's device and decompressed on arrival, or as it is."""
        if self._compressor is None:
            return grad
        with tf.device(self._tower_devices[tower]):
            payload = transfer.narrow(grad, self._compressor)
        return transfer.widen(payload, var, self._compressor)

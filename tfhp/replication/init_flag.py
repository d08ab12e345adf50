"""A flag that a manager's initialising op sets and every update asserts.

Some managers keep copies that are right only once an op has run in the session: per-tower
copies assigned tower 0's values (`post_init_ops`), a worker's local copies filled from the
masters, the chief's values broadcast to every worker (a session hook). A hand-built graph that
forgot that op trained on copies that differed (replicated towers by up to 0.68) without a word.
With the flag, the first update fails instead, and its message names the op to run.

Protocol: the flag is a boolean variable, False when initialised. `init_op` sets it after the
manager's initialising ops; `gated` makes each gradient wait for a check that asserts it. The
check reads one boolean, so it runs at the very start of a step beside the forward pass and the
gradients it gates come much later: no step waits for it.
Perf: step time unchanged within noise (replicated, 2 virtual CPU devices, median of 6
alternating rounds: trivial model, batch 4: 0.664 ms with the check, 0.666 ms without, rounds
0.57-0.90 ms; lenet, batch 32, 4 rounds: 60.4 ms with, 62.2 ms without; loaded 2-core x86_64,
TF 2.21, 2026-11-23).
Limit: a restore after the op ran is not seen, so the op must still be rerun after every restore
(restoring into per-tower copies fills tower 0 only).
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.replication import base

_APPLY_SCOPE = scopes.APPLY + '/'  # absolute: the stage's scope at the graph's root


class InitFlag:
    """A boolean variable an initialising op sets and a check asserts.

    Args:
      device: where the flag and its check live: a CPU (Assert has CPU kernels only).
      name: the flag variable's name (e.g. 'tower_copies_made').
      init_op_name: the name `init_op` gives its first op; reserved now, since the check is
        built before it (the op must see every variable, the optimizer's slots included).
      message: the check's error, a format string whose '%s' becomes the op's name (no
        quotes: the error would show them escaped).
      local: a local variable (the flag of a worker's own local copies, initialised by each
        worker) rather than a global one.
    """

    def __init__(self, device, name, init_op_name, message, local=False):
        graph = tf.get_default_graph()
        with tf.control_dependencies(None), tf.name_scope(None), tf.device(device):
            self.init_op_name = graph.unique_name(init_op_name)
            self.variable = tf.Variable(
                False, trainable=False, name=name,
                collections=[tf.GraphKeys.LOCAL_VARIABLES if local else
                             tf.GraphKeys.GLOBAL_VARIABLES])
            # Under the apply stage: the trace analyser counts the check as the update's.
            with tf.name_scope(_APPLY_SCOPE):
                self.check = tf.debugging.Assert(self.variable.read_value(),
                                                 [message % self.init_op_name],
                                                 name='check_' + name)
        self._base_name = init_op_name
        self._named = False
        self._gates = {}  # device -> NoOp after the check, on that device

    def init_op(self, ops):
        """An op running `ops`, then setting the flag; the first one made has the reserved name."""
        # A trailing '/' takes the reserved name as it is, instead of uniquifying it.
        name = self._base_name if self._named else self.init_op_name + '/'
        self._named = True
        with tf.control_dependencies(ops):
            return tf.group(self.variable.assign(True, read_value=False), name=name)

    def gated(self, grads_and_vars):
        """grads_and_vars whose gradients pass only once the check has found the flag set.

        Each gradient passes through an identity on its own device, after that device's gate.
        """
        return [(base.map_values(g, self._after_check), v) for g, v in grads_and_vars]

    def _after_check(self, values):
        device = values.device
        if device not in self._gates:
            # One gate per device: a single control edge crosses from the check's CPU to it.
            with tf.control_dependencies(None), tf.name_scope(_APPLY_SCOPE), tf.device(device):
                with tf.control_dependencies([self.check]):
                    self._gates[device] = tf.no_op(name=self.variable.op.name + '_gate')
        with tf.device(device), tf.control_dependencies([self._gates[device]]):
            return tf.identity(values)

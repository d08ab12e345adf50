"""One full copy of every variable per tower: what `Replicated` and `Independent` share.

Tower t creates its variables under the variable scope `v<t>/` on its own device, so every tower
reads local weights and no copy crosses devices in the forward pass. The copies start equal
because `post_init_ops` (run after initialisation *and* after a restore, which fills tower 0
only) assign tower 0's values to every other tower: model variables and everything the
optimizer created (slots, Adam's beta powers). With more than one tower they also set the flag
`tower_copies_made` (`tfhp.replication.init_flag`), which every update asserts: a step of a
graph that never ran them fails, naming the op ('copy_from_tower_0'), instead of training
copies that differ.

Checkpoints hold tower 0's variables under canonical names, with the `v0/` prefix removed:
the names a ParameterServer run uses, so one checkpoint restores into any manager and any number
of towers.
"""
import contextlib

import tensorflow.compat.v1 as tf

from tfhp.ops import staging
from tfhp.replication import base
from tfhp.replication import init_flag

COPIES_MADE = 'tower_copies_made'
POST_INIT_OP = 'copy_from_tower_0'


def copy_prefix(tower):
    """The variable scope of tower `tower`'s copies ('v0', 'v1', ...)."""
    return 'v%d' % tower


class PerTowerCopies(base.VariableManager):
    """Base for managers keeping one copy of each variable per tower.

    Args:
      tower_devices: device of each tower; tower t's copies live on tower_devices[t].
    """

    def __init__(self, tower_devices):
        self._tower_devices = tuple(tower_devices)
        # tower -> names of the variables its optimizer created (slots, non-slot variables).
        self._optimizer_variables = {}
        self._made = None  # the InitFlag of post_init_ops, made by the first update

    @property
    def num_towers(self):
        return len(self._tower_devices)

    @contextlib.contextmanager
    def tower_scope(self, tower):
        # No auxiliary name scope: op names stay `tower_<t>/<stage>/...` for the trace analyser.
        with tf.device(self._tower_devices[tower]), tf.variable_scope(
                copy_prefix(tower), auxiliary_name_scope=False):
            yield

    def trainable_variables(self, tower):
        return tf.trainable_variables(scope=copy_prefix(tower) + '/')

    def _apply_on_tower(self, tower, optimizer_fn, grads_and_vars):
        """Applies gradients to tower `tower`'s copies with a new optimizer, on its device.

        Tower 0's optimizer ops and variables get the same names as a ParameterServer's (so
        checkpoints match); the others nest under `v<t>/`. With several towers the gradients
        wait for the check that post_init_ops ran.
        """
        if self.num_towers > 1:
            grads_and_vars = self._copies_made().gated(grads_and_vars)
        before = set(v.op.name for v in tf.global_variables())
        scope = tf.name_scope(copy_prefix(tower)) if tower else contextlib.nullcontext()
        with tf.device(self._tower_devices[tower]), scope:
            update = optimizer_fn().apply_gradients(grads_and_vars)
        self._optimizer_variables[tower] = (
            set(v.op.name for v in tf.global_variables()) - before)
        return update

    def _copies_made(self):
        """The InitFlag that post_init_ops set (made once, on tower 0's host)."""
        if self._made is None:
            self._made = init_flag.InitFlag(
                staging.host_of(self._tower_devices[0]), COPIES_MADE, POST_INIT_OP,
                'the variable copies of the towers were never made equal: run the '
                'post_init_ops of the variable manager (the op `%s`, in '
                'StepOps.post_init_ops) once after initialising or restoring the variables')
        return self._made

    def _increment(self, updates, global_step):
        """One global_step increment after all `updates` (the manager contract)."""
        with tf.control_dependencies(updates):
            return global_step.assign_add(1, read_value=False)

    def _tower_variables(self, tower):
        """Global variables owned by `tower`, in creation order."""
        prefix = copy_prefix(tower) + '/'
        created = self._optimizer_variables.get(tower, set())
        return [v for v in tf.global_variables()
                if v.op.name.startswith(prefix) or v.op.name in created]

    def post_init_ops(self):
        """Assigns tower 0's variables (model and optimizer) to every other tower's copies.

        Once the update is built, they also set the flag its check asserts.
        """
        source = self._tower_variables(0)
        assigns = []
        for tower in range(1, self.num_towers):
            target = self._tower_variables(tower)
            if len(target) != len(source):
                raise ValueError('tower %d has %d variables, tower 0 has %d'
                                 % (tower, len(target), len(source)))
            for src, dst in zip(source, target):
                if src.shape != dst.shape or src.dtype.base_dtype != dst.dtype.base_dtype:
                    raise ValueError('tower %d variable %s does not match tower 0\'s %s'
                                     % (tower, dst.op.name, src.op.name))
                assigns.append(dst.assign(src.read_value(), read_value=False))
        if not assigns:
            return []
        if self._made is None:
            return [tf.group(*assigns, name=POST_INIT_OP)]
        return [self._made.init_op(assigns)]

    def savable_variables(self):
        # Neither the other towers' copies nor the flag: a restore must be followed by
        # post_init_ops, whatever the checkpoint's flag said.
        others = set(v.op.name for t in range(1, self.num_towers)
                     for v in self._tower_variables(t))
        if self._made is not None:
            others.add(self._made.variable.op.name)
        prefix = copy_prefix(0) + '/'
        return {(v.op.name[len(prefix):] if v.op.name.startswith(prefix) else v.op.name): v
                for v in tf.global_variables() if v.op.name not in others}

"""Loss scaling for float16 training: fixed, or automatic as tf_cnn_benchmarks does it.

float16 has 10 mantissa bits and no exponent below 2^-24, so the small gradients of a deep net
underflow to zero. Scaling the loss by S scales every gradient by S (the chain rule is linear),
lifting them into float16's range; dividing the gradients by S (in float32) before they are
applied leaves the update unchanged.

A fixed scale (`auto=False`) is a constant. The automatic scale is a variable (checkpointed
with the model) adjusted once per step from the gradients the optimizer applies, which every
tower of a synchronous step shares:

  * a step whose applied gradients hold an inf or a nan is skipped (the optimizer applies
    nothing; `global_step` still advances), the scale halves (never below 1) and the count of
    finite steps restarts;
  * after `inc_every_n` finite steps in a row the scale doubles and the count restarts.

Protocol with a variable manager (`tfhp.replication`), which never learns about the scale:
`optimizer_fn(fn)` wraps the factory the manager calls, so each optimizer it makes checks the
gradients it is given and applies them only if they are finite. The scale update goes with
the optimizer that increments `global_step` (a parameter server's single apply, the
synchronous chief's update, each asynchronous replica's own), from the finiteness of every
apply built since the previous update; managers that increment `global_step` themselves after
one apply per tower (replicated, independent) leave the update to `update_op()`, which the step
builder groups into the train op. The update reads the finiteness of gradients that were
computed from this step's read of the scale, so it runs after that read.
"""
import tensorflow.compat.v1 as tf

# A scale below 1 would shrink gradients, adding underflow instead of preventing it.
MIN_SCALE = 1.0


def all_finite(grads):
    """A boolean scalar: no gradient of `grads` (tensors, IndexedSlices or None) holds an inf
    or a nan."""
    checks = []
    for grad in grads:
        if grad is None:
            continue
        values = grad.values if isinstance(grad, tf.IndexedSlices) else grad
        checks.append(tf.reduce_all(tf.math.is_finite(values)))
    return tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)


class LossScale:
    """The loss scale of one training graph (create it where its variables should live: the
    global step's device).

    Args:
      initial: the scale (the first one, when automatic).
      auto: adjust it from the gradients (see the module docstring); else it is a constant.
      inc_every_n: automatic: double the scale after this many finite steps in a row.
    """

    def __init__(self, initial, auto=False, inc_every_n=1000):
        self._auto = auto
        self._inc_every_n = inc_every_n
        self._pending = []  # finiteness of the applies built since the last scale update
        if auto:
            self.scale = tf.get_variable('loss_scale', initializer=float(initial),
                                         trainable=False)
            self.finite_steps = tf.get_variable('loss_scale_normal_steps', initializer=0,
                                                dtype=tf.int32, trainable=False)
        else:
            self.scale = tf.constant(float(initial), name='loss_scale')
            self.finite_steps = None

    def value(self):
        """The scale as a tower reads it (one read per tower: the same value scales the loss
        and unscales its gradients)."""
        return tf.identity(self.scale, name='loss_scale_value')

    @staticmethod
    def unscale(grads, value):
        """Each gradient divided by `value` (in float32, so a float16 gradient does not lose
        bits to a subnormal 1/scale), back in its own dtype; None stays None."""
        unscaled = []
        for grad in grads:
            if grad is None:
                unscaled.append(None)
                continue
            wide = tf.cast(grad, tf.float32) / value
            unscaled.append(wide if grad.dtype == tf.float32 else tf.cast(wide, grad.dtype))
        return unscaled

    def optimizer_fn(self, optimizer_fn):
        """Wraps an optimizer factory so its optimizers skip non-finite updates (automatic
        scale; a fixed scale skips nothing and gets `optimizer_fn` back).

        Only the instance's `apply_gradients` is replaced, so each optimizer keeps its class
        and every other method (managers may ask it for slots or variables).
        """
        if not self._auto:
            return optimizer_fn

        def make():
            optimizer = optimizer_fn()
            optimizer.apply_gradients = self._skipping(optimizer.apply_gradients)
            return optimizer
        return make

    def _skipping(self, apply_gradients):
        def apply_if_finite(grads_and_vars, global_step=None, name=None):
            grads_and_vars = list(grads_and_vars)
            finite = all_finite([g for g, _ in grads_and_vars])
            self._pending.append(finite)
            # Slots are made under init_scope, so they may be created inside the cond branch.
            update = tf.cond(finite, lambda: tf.group(apply_gradients(grads_and_vars, name=name)),
                             tf.no_op, name='apply_if_finite')
            if global_step is None:
                return update
            # As the wrapped optimizer would: one increment after the update, skipped or not.
            with tf.control_dependencies([update, self.update_op()]):
                with tf.device(global_step.device):
                    return global_step.assign_add(1, read_value=False)
        return apply_if_finite

    def update_op(self):
        """The scale update from the applies built since the previous one, or a no-op when
        there are none (the scale is fixed, or an optimizer already updated it)."""
        if not self._pending:
            return tf.no_op()
        finite = tf.reduce_all(tf.stack(self._pending))
        self._pending = []
        with tf.device(self.scale.device), tf.name_scope('loss_scale_update'):
            scale = self.scale.read_value()
            count = tf.where(finite, self.finite_steps.read_value() + 1, 0)
            grow = count >= self._inc_every_n
            new_scale = tf.where(finite, tf.where(grow, scale * 2.0, scale),
                                 tf.maximum(scale / 2.0, MIN_SCALE))
            return tf.group(self.scale.assign(new_scale, read_value=False),
                            self.finite_steps.assign(tf.where(grow, 0, count),
                                                     read_value=False))

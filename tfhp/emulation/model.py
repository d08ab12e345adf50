"""The emulated model: the real model's variables, a wait in place of each layer's arithmetic.

For each layer of a `ComputeProfile`, in forward order, the tower creates the layer's variables
with `get_variable` (the same names, shapes and dtypes as the real model, so the manager places
them, and the links carry them, as the real model's), then waits the layer's forward time once
its input and its weights are there. A custom gradient makes the backward pass the mirror: each
layer waits its backward time after the layer above it, then hands out its gradients. So the
gradients come into being one layer after the other, last layer first, when they would.

Each gradient is the value of its variable as this tower read it (`tf.identity` of the read:
no copy, no arithmetic): the bytes and the order are the real model's, the values are not. A
job of such workers trains nothing useful; it measures how the cluster moves the real model's
bytes. The waits are `time.sleep` in a `numpy_function` on the tower's CPU: a sleeping worker
uses no core, so dozens of workers fit on two cores.

The chain of waits carries a time stamp [due, returned]: when the previous wait's layer was due
to end and when that wait really returned. A wait that starts less than DISPATCH_S after the
previous one returned continues the schedule: it ends at due + its seconds, not at now + its
seconds. So the ~0.2 ms of dispatching each numpy_function, and a sleep that wakes late, do not
add up over a model's layers: resnet20's 40 waits lost 13 ms of 172 to dispatch alone, and on
busy cores (16-32 workers on two) wakes late by milliseconds each made its compute part 5-35%
long when the chain restarted from every late wake. Only the last wake's lateness remains. A
wait that starts later than that after the previous one returned (the layer's weights still on
the link) counts from when it starts, as the real layer would compute from then.

Batch-norm moving statistics are created (they are checkpointed and placed like the real ones)
but not updated each step.

`timing.EMULATED_COMPUTE` tallies the waits as they happened (each from the previous wait's
return, or its own start, to its own return: a pass's waits add up to its first start to its
last return), so a run can say how long its compute part really lasted: a last wake that comes
late on busy cores shows there, beside the profile's time
(`results.Figures.emulated_compute_ms`).
"""
import time

import numpy as np
import tensorflow.compat.v1 as tf

from tfhp import timing


# A wait that starts at most this long after the previous one returned continues its schedule.
DISPATCH_S = 1e-3


def _wait(seconds, stamp, name, stage):
    """The time stamp [due, returned] (float64, `time.perf_counter`) of a wait of `seconds`: when
    it was due to end and when it returned. It runs once `stamp` (the previous wait's) and every
    tensor it depends on are computed (module doc). A stamp of zeros starts a pass of `stage`
    ('forward' or 'backward', tallied apart: `timing.PassTally`)."""
    def sleep(previous):
        due, returned = float(previous[0]), float(previous[1])
        now = time.perf_counter()
        continues = 0.0 <= now - returned < DISPATCH_S
        end = (due if continues else now) + seconds
        if end > now:
            time.sleep(end - now)
        woke = time.perf_counter()
        timing.EMULATED_COMPUTE.add(woke - (returned if continues else now), returned == 0.0,
                                    stage)
        return np.array([end, woke])
    out = tf.numpy_function(sleep, [stamp], tf.float64, name=name)
    out.set_shape([2])
    return out


def _touch(reads):
    """A float64 zero that depends on the largest tensor of `reads` (the layer's weights: the
    forward wait starts once they are there; one element of it is read, and one op per small
    variable less keeps an emulated step's own CPU low)."""
    largest = max(reads, key=lambda r: r.shape.num_elements())
    return tf.cast(tf.reshape(largest, [-1])[0], tf.float64) * 0.0


def _layer(x, reads, layer):
    """One layer: x -> the time its forward wait ends; its gradient mirrors it (module doc)."""
    @tf.custom_gradient
    def emulated(x, *reads):
        y = _wait(layer.forward_s, x + _touch(reads), 'forward_wait', 'forward')

        def grad(dy):
            waited = _wait(layer.backward_s, dy, 'backward_wait', 'backward')
            with tf.control_dependencies([waited]):
                grads = [tf.identity(r) for r in reads]
            return [waited] + grads
        return y, grad
    return emulated(x, *reads)


def make_model_fn(profile, num_classes, delay_s=0.0):
    """model_fn(images, labels) -> (loss, logits) of the emulated `profile` for one tower.

    The logits are [batch, num_classes] zeros plus the last layer's output, so the loss and
    the accuracy ops of the step builder work unchanged (and cost nothing). delay_s: a
    straggler's extra wait after the forward pass (as `tfhp.runner.tower.make_model_fn`'s).
    """
    def model_fn(images, labels):
        # The first stamp [0, 0] is no time: the first wait counts from its own start.
        x = tf.zeros([2], tf.float64) + tf.cast(tf.reshape(images, [-1])[0], tf.float64) * 0.0
        for layer in profile.layers:
            reads = {True: [], False: []}
            for v in layer.variables:
                variable = tf.get_variable(
                    v.name, v.shape, tf.as_dtype(v.dtype), trainable=v.trainable,
                    initializer=tf.truncated_normal_initializer(stddev=0.01))
                reads[v.trainable].append(tf.convert_to_tensor(variable))
            # Moving statistics are read as the real forward pass reads them; no gradient.
            with tf.control_dependencies(reads[False]):
                x = tf.identity(x)
            if reads[True]:
                x = _layer(x, reads[True], layer)
        if delay_s:
            x = _wait(delay_s, x, 'straggler_delay', 'forward')
        batch = tf.shape(labels)[0]
        # x is a time stamp: it enters the logits as a zero, and its gradient is a stamp of
        # zeros: the backward chain's pass starts when the loss's gradient is there.
        logits = tf.zeros([batch, num_classes]) + tf.cast(tf.reduce_sum(x) * 0.0, tf.float32)
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=labels, logits=logits), name='cross_entropy')
        return loss, logits
    return model_fn

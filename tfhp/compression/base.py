"""Compressor: what a gradient becomes on the wire, and how it comes back.

A compressor is a pair of graph builders. `compress` runs on the sender (in its device scope)
and returns the payload that crosses the link; `decompress` runs where the gradient is used and
returns a tensor of the gradient's shape in the requested dtype. Between them the payload may be
summed with other senders' payloads on the way (an all-reduce, a ps accumulator) only when the
compressor is `summable`: a cast is (the sum of float16 tensors is a float16 tensor), a sign or
a top-k selection is not. A payload that cannot be summed is a tuple of tensors (e.g. values and
their indices); the all-reduce then gathers every sender's payload to every device
(`tfhp.ops.allgather`) and each device decompresses and adds them, and a ps decompresses each
worker's payload before it aggregates.

Error feedback (the only state a scheme keeps): a scheme with `error_feedback` remembers, per
gradient, what its payloads have left out so far, and sends it later. Senders call `send`,
never `compress` directly:

  1. the first `send` of a gradient makes its residual r, a local variable of the gradient's
     shape on the sender's device, zero at first (one per call: per tower and variable, or per
     pack);
  2. each step the payload is compress(g + r), and r becomes g + r - decompress(payload);
  3. so after any number of steps, what was sent plus r equals the sum of the gradients: no
     part of a gradient is lost, it is only late (Seide et al. 2014; Karimireddy et al. 2019).

Momentum correction (`momentum` m > 0; Lin et al. 2018, "Deep Gradient Compression"): the
sender, not the update, applies the momentum. It keeps a velocity u per gradient, and each
step u becomes m u + g and is what gets compressed (with the residual, under error feedback);
the update then applies the mean of the payloads with plain SGD (--optimizer=sgd). Momentum
applied after decompression instead multiplies each late burst the residual releases by
1 / (1 - m), tenfold at 0.9, which sent randomk to chance in the compression study
(docs/results.md). Schemes that send a few elements whole (`masks_momentum`: top-k,
random-k) also zero u where an element was sent (momentum factor masking), so the velocity of
an element already sent does not push it again.

The residual and the velocity are local variables (run `tf.local_variables_initializer()`);
checkpoints do not hold them, so a restored run starts with r = 0 and u = 0. Schemes without
error feedback or momentum keep no state and `send` is `compress`. Schemes register by name
(`tfhp.compression.register`); the flag --gradient_compression picks one.
"""
import abc

import tensorflow.compat.v1 as tf


class Compressor(abc.ABC):
    """A gradient compression scheme.

    Attributes:
      name: the --gradient_compression value that picks it.
      summable: payloads of several senders can be added as they travel, so the existing
        all-reduce algorithms and the ps's accumulators carry them unchanged. A scheme that is
        not summable returns a tuple of tensors from `compress`.
      wire_ratio: bytes on the wire per byte of the float32 gradient (0.5 for a 16-bit cast),
        for the link bound's expected traffic.
      error_feedback: `send` adds a per-gradient residual of what earlier payloads left out
        (the module docstring's protocol).
      momentum: the senders' momentum m under momentum correction (module doc); 0: none
        (`tfhp.compression.get` sets it from --momentum_correction).
      masks_momentum: with momentum, an element's velocity restarts once it is sent (for
        schemes that send a few elements whole).
    """
    name = None
    summable = True
    wire_ratio = 1.0
    error_feedback = False
    momentum = 0.0
    masks_momentum = False

    @abc.abstractmethod
    def compress(self, tensor):
        """The payload of a dense floating `tensor`, built in the caller's device scope."""

    @abc.abstractmethod
    def decompress(self, payload, dtype, shape):
        """The gradient that `payload` carries, as a tensor of `dtype` and static `shape`, in
        the caller's scope."""

    def send(self, tensor):
        """The payload to send for `tensor` this step, in the caller's (the sender's) device
        scope: `compress(tensor)`; with momentum `tensor` is first added to the velocity, and
        with error feedback the residual is added before compressing (module doc). The state
        is updated before the payload is available."""
        if not (self.error_feedback or self.momentum):
            return self.compress(tensor)
        if not tensor.shape.is_fully_defined():
            raise ValueError('error feedback and momentum correction keep state of the '
                             'gradient\'s shape, which must be static; %s has shape %s'
                             % (tensor.name, tensor.shape))
        updates = []
        value = tensor
        if self.momentum:
            velocity = _state(tensor, 'momentum_correction_velocity')
            value = self.momentum * velocity.read_value() + tensor
        corrected = value
        if self.error_feedback:
            residual = _state(tensor, 'error_feedback_residual')
            corrected = value + residual.read_value()
        payload = self.compress(corrected)
        sent = self.decompress(payload, tensor.dtype, tensor.shape)
        if self.error_feedback:
            updates.append(residual.assign(corrected - sent, read_value=False))
        if self.momentum:
            if self.masks_momentum:
                value *= tf.cast(tf.equal(sent, 0), value.dtype)
            updates.append(velocity.assign(value, read_value=False))
        with tf.control_dependencies(updates):
            return tf.nest.map_structure(tf.identity, payload)


def _state(tensor, name):
    """A local variable of `tensor`'s shape and dtype, zero at first, on the caller's device."""
    return tf.Variable(tf.zeros(tensor.shape, tensor.dtype), trainable=False,
                       collections=[tf.GraphKeys.LOCAL_VARIABLES], name=name)

"""Compressor: what a gradient becomes on the wire, and how it comes back.

A compressor is a pair of graph builders. `compress` runs on the sender (in its device scope)
and returns the payload that crosses the link; `decompress` runs where the gradient is used and
returns a tensor of the gradient's shape in the requested dtype. Between them the payload may be
summed with other senders' payloads on the way (an all-reduce, a ps accumulator) only when the
compressor is `summable`: a cast is (the sum of float16 tensors is a float16 tensor), a sign or
a top-k selection is not. Schemes register by name (`tfhp.compression.register`); the flag
--gradient_compression picks one.
"""
import abc


class Compressor(abc.ABC):
    """A gradient compression scheme.

    Attributes:
      name: the --gradient_compression value that picks it.
      summable: payloads of several senders can be added as they travel, so the existing
        all-reduce algorithms and the ps's accumulators carry them unchanged.
      wire_ratio: bytes on the wire per byte of the float32 gradient (0.5 for a 16-bit cast),
        for the link bound's expected traffic.
    """
    name = None
    summable = True
    wire_ratio = 1.0

    @abc.abstractmethod
    def compress(self, tensor):
        """The payload of a dense floating `tensor`, built in the caller's device scope."""

    @abc.abstractmethod
    def decompress(self, payload, dtype):
        """The gradient that `payload` carries, as a tensor of `dtype`, in the caller's scope."""

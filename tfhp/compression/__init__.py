"""Gradient compression schemes, registered by name (--gradient_compression).

  base     the Compressor interface: compress on the sender, decompress where the gradient is
           used; error feedback (a residual per gradient)
  cast     float16 and bfloat16 transfer (summable)
  sign     1 bit per element and a scale (EF-SignSGD), with or without error feedback
  sparse   k of n elements as values and indices; which k: topk (largest magnitudes, with or
           without error feedback), randomk (a uniform draw, with error feedback)

The schemes that cannot be summed (sign, topk, randomk) ride the all-reduce as an all-gather of
their payloads (`tfhp.ops.allgather`) and reach a ps as one payload per sender.

`get(name)` returns the scheme ('none': None, gradients travel as they are). A new scheme is a
file with its Compressor subclass and one `register` line below (docs/extending.md). This module
imports no TensorFlow (`tfhp.config` checks the flag before TensorFlow loads): a scheme's module
is imported when the scheme is first built.
"""
import importlib

NONE = 'none'
_SCHEMES = {}


def register(name, factory, *args):
    """Makes `factory(*args)` (a Compressor) the scheme --gradient_compression=name picks.

    Args:
      name: the scheme's flag value.
      factory: its Compressor class (or a function returning one), or 'module:Class', e.g.
        'tfhp.compression.cast:Cast', imported when the scheme is first built.
      *args: passed to the factory.
    """
    if name in _SCHEMES or name == NONE:
        raise ValueError('gradient compression %r is registered twice' % name)
    _SCHEMES[name] = (factory, args)


def get(name):
    """The Compressor registered as `name`, or None for 'none'; ValueError naming the known
    schemes otherwise."""
    if name == NONE:
        return None
    if name not in _SCHEMES:
        raise ValueError('unknown gradient compression %r; known: %s'
                         % (name, ', '.join(names())))
    factory, args = _SCHEMES[name]
    if isinstance(factory, str):
        module, attribute = factory.split(':')
        factory = getattr(importlib.import_module(module), attribute)
    return factory(*args)


def names():
    """Every scheme's name, 'none' first."""
    return (NONE,) + tuple(_SCHEMES)


register('float16', 'tfhp.compression.cast:Cast', 'float16')
register('bfloat16', 'tfhp.compression.cast:Cast', 'bfloat16')
register('sign', 'tfhp.compression.sign:Sign')
register('sign_noef', 'tfhp.compression.sign:Sign', False)
register('topk', 'tfhp.compression.topk:TopK', 0.01)
register('topk_noef', 'tfhp.compression.topk:TopK', 0.01, False)
register('randomk', 'tfhp.compression.randomk:RandomK', 0.01)

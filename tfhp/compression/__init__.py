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


def register(name, factory, *args, summable=True, **options):
    """Makes `factory(*args, **options)` (a Compressor) the scheme --gradient_compression=name
    picks.

    Args:
      name: the scheme's flag value.
      factory: its Compressor class (or a function returning one), or 'module:Class', e.g.
        'tfhp.compression.cast:Cast', imported when the scheme is first built.
      *args: passed to the factory.
      summable: the Compressor's own `summable`, said here too so that the config can refuse
        an all-reduce that cannot carry the payload before TensorFlow is imported
        (tests/compression_test.py checks that the two agree).
      **options: passed to the factory; a `fraction` option (the share of elements a sparse
        scheme sends) can be set by --compression_fraction (`get`).
    """
    if name in _SCHEMES or name == NONE:
        raise ValueError('gradient compression %r is registered twice' % name)
    _SCHEMES[name] = (factory, args, options, summable)


def get(name, fraction=None, momentum=0.0):
    """The Compressor registered as `name`, or None for 'none'.

    Args:
      name: the scheme.
      fraction: the share of elements a sparse scheme sends (None: its registered default).
      momentum: the senders' momentum under momentum correction (`base` module doc), in
        [0, 1); 0: none.
    Raises:
      ValueError: an unknown scheme (naming the known ones), a fraction for a scheme that
        sends every element (naming --compression_fraction and the schemes it applies to),
        or a momentum without a scheme or outside [0, 1) (naming --momentum_correction).
    """
    if not 0 <= momentum < 1:
        raise ValueError('--momentum_correction must be in [0, 1), got %r' % (momentum,))
    if name == NONE:
        if fraction is not None:
            raise ValueError(_fraction_message(name))
        if momentum:
            raise ValueError('--momentum_correction moves the momentum to the senders of '
                             'compressed gradients; without --gradient_compression use '
                             '--optimizer=momentum')
        return None
    if name not in _SCHEMES:
        raise ValueError('unknown gradient compression %r; known: %s'
                         % (name, ', '.join(names())))
    factory, args, options, _ = _SCHEMES[name]
    if fraction is not None:
        if not takes_fraction(name):
            raise ValueError(_fraction_message(name))
        options = dict(options, fraction=fraction)
    if isinstance(factory, str):
        module, attribute = factory.split(':')
        factory = getattr(importlib.import_module(module), attribute)
    compressor = factory(*args, **options)
    compressor.momentum = momentum
    return compressor


def summable(name):
    """Whether a registered scheme's payloads can be added as they travel ('none' can: its
    payloads are the gradients)."""
    return name == NONE or _SCHEMES[name][3]


def takes_fraction(name):
    """Whether the scheme sends a share of the elements that --compression_fraction sets."""
    return name in _SCHEMES and 'fraction' in _SCHEMES[name][2]


def fraction_for(name, fraction):
    """`fraction` where scheme `name` sends a share of the elements, else None: one
    --compression_fraction serves both the gradients' and the downlink's scheme."""
    return fraction if takes_fraction(name) else None


def fraction_schemes():
    """The schemes --compression_fraction applies to."""
    return tuple(n for n in _SCHEMES if takes_fraction(n))


def _fraction_message(name):
    return ('--compression_fraction applies to the schemes that send a share of the elements '
            '(%s), not to --gradient_compression=%s' % (', '.join(fraction_schemes()), name))


def names():
    """Every scheme's name, 'none' first."""
    return (NONE,) + tuple(_SCHEMES)


register('float16', 'tfhp.compression.cast:Cast', 'float16')
register('bfloat16', 'tfhp.compression.cast:Cast', 'bfloat16')
register('sign', 'tfhp.compression.sign:Sign', summable=False)
register('sign_noef', 'tfhp.compression.sign:Sign', False, summable=False)
register('topk', 'tfhp.compression.topk:TopK', summable=False, fraction=0.01)
register('topk_noef', 'tfhp.compression.topk:TopK', summable=False, fraction=0.01,
         error_feedback=False)
register('randomk', 'tfhp.compression.randomk:RandomK', summable=False, fraction=0.01)

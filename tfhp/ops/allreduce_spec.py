"""Parsing of `--all_reduce_spec` strings, in tf_cnn_benchmarks' syntax. Pure Python, no TF.

Kept apart from `tfhp.ops.allreduce` (which builds the graph) so that `tfhp.config` can refuse
a malformed spec before TensorFlow is even imported.

Grammar:

    spec       ::= range_spec | range_spec ':' limit ':' spec
    range_spec ::= alg_spec | alg_spec '/' alg_spec
    alg_spec   ::= alg | alg '#' shards
    alg        ::= a name of ALGORITHMS ('pscpu', 'psgpu', 'xring', 'nccl', 'collective', ...)
    limit      ::= digits [kKmMgGtT]        (a count of tensor *elements*; k = 1024)

`pscpu:32k:xring` reduces tensors of at most 32768 elements with `pscpu` and larger ones with
`xring`; limits must increase from left to right. `a/b` applies `a` among the devices of each
worker and `b` across workers (in one process there is one worker, so `b` sees one tensor).
`#k` is the algorithm's shard count: pieces reduced on k devices (`pscpu`, `psgpu`) or k rings
each carrying 1/k of the tensor (`xring`).
"""
import collections
import re

Algorithm = collections.namedtuple('Algorithm', [
    'name',      # the spec's name for it
    'sharded',   # takes a '#shards' suffix
    'gpu_only',  # runs on GPUs only (refused with --device=cpu before a graph is built)
    'doc',       # one line: what it does (`tfhp.ops.allreduce_builder` builds it)
    'gathers',   # has an all-gather (`AllReduce.all_gather`): a compressed payload that cannot
                 # be summed rides it (refused before a graph is built where it has none)
], defaults=(False,))
# The one list of algorithm names: `allreduce_builder.BUILDERS` builds each of them (a test
# checks that both name the same set).
ALGORITHMS = collections.OrderedDict((a.name, a) for a in (
    Algorithm('pscpu', True, False, 'add on the host CPU, each tensor cut into k pieces', True),
    Algorithm('psgpu', True, False, 'add on the tower devices, k pieces on k devices', True),
    Algorithm('xring', True, False, 'k rings, each over 1/k of the tensor', True),
    Algorithm('nccl', False, True, 'NCCL all-sum'),
    Algorithm('collective', False, False, "TensorFlow's collective all-reduce"),
))
_MULTIPLIERS = {'': 1, 'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30, 't': 1 << 40}

AlgSpec = collections.namedtuple('AlgSpec', ['name', 'shards'])
RangeSpec = collections.namedtuple('RangeSpec', [
    'inner',   # AlgSpec applied among one worker's devices (or among all, when outer is None)
    'outer',   # AlgSpec across workers, or None
    'limit',   # largest tensor (in elements) this range takes; None for the last range
])


def _parse_alg(text, spec):
    match = re.fullmatch(r'([a-z][a-z0-9_]*)(?:#(\d+))?', text)
    if not match or match.group(1) not in ALGORITHMS:
        raise ValueError('all_reduce_spec %r: unknown algorithm %r; known: %s'
                         % (spec, text, ', '.join(ALGORITHMS)))
    name, shards = match.group(1), int(match.group(2) or 1)
    if shards < 1 or (shards > 1 and not ALGORITHMS[name].sharded):
        sharded = [a.name for a in ALGORITHMS.values() if a.sharded]
        raise ValueError('all_reduce_spec %r: %r cannot take %d shards (only %s shard)'
                         % (spec, text, shards, ', '.join(sharded)))
    return AlgSpec(name, shards)


def _parse_limit(text, spec):
    match = re.fullmatch(r'(\d+)([kKmMgGtT]?)', text)
    if not match:
        raise ValueError('all_reduce_spec %r: limit %r is not a number like 4096, 32k or 1m'
                         % (spec, text))
    return int(match.group(1)) * _MULTIPLIERS[match.group(2).lower()]


def _parse_range(text, spec):
    parts = text.split('/')
    if len(parts) > 2 or not all(parts):
        raise ValueError('all_reduce_spec %r: %r must be alg or alg/alg' % (spec, text))
    inner = _parse_alg(parts[0], spec)
    outer = _parse_alg(parts[1], spec) if len(parts) == 2 else None
    return inner, outer


def parse(spec):
    """Parses an all-reduce spec.

    Args:
      spec: e.g. 'xring', 'psgpu#2', 'pscpu:32k:xring', 'nccl/xring'.
    Returns:
      A tuple of `RangeSpec`, smallest range first; the last has limit None.
    Raises:
      ValueError: the spec is malformed; the message quotes it and names the bad part.
    """
    parts = spec.split(':')
    if len(parts) % 2 != 1:
        raise ValueError('all_reduce_spec %r must be alg or alg:limit:alg...' % (spec,))
    ranges, previous = [], -1
    for i in range(0, len(parts), 2):
        inner, outer = _parse_range(parts[i], spec)
        limit = _parse_limit(parts[i + 1], spec) if i + 1 < len(parts) else None
        if limit is not None:
            if limit <= previous:
                raise ValueError('all_reduce_spec %r: limits must increase' % (spec,))
            previous = limit
        ranges.append(RangeSpec(inner, outer, limit))
    return tuple(ranges)


def algorithm_names(spec):
    """The set of algorithm names a (valid) spec uses, e.g. {'pscpu', 'xring'}."""
    names = set()
    for rng in parse(spec):
        names.add(rng.inner.name)
        if rng.outer is not None:
            names.add(rng.outer.name)
    return names


def gpu_only(spec):
    """The GPU-only algorithms a (valid) spec uses, sorted (empty: it runs on CPUs)."""
    return sorted(name for name in algorithm_names(spec) if ALGORITHMS[name].gpu_only)


def without_all_gather(spec):
    """The algorithms a (valid) spec uses that have no all-gather, sorted (empty: a payload
    that cannot be summed rides every part of it)."""
    return sorted(name for name in algorithm_names(spec) if not ALGORITHMS[name].gathers)


def cpu_algorithms():
    """Names of the algorithms that run on CPU devices."""
    return [a.name for a in ALGORITHMS.values() if not a.gpu_only]

"""Builds the AllReduce an `--all_reduce_spec` names (the syntax is in `allreduce_spec`).

Algorithm names mean, for the devices of one graph:
  pscpu#k     add on the host CPU, each tensor cut into k pieces (`CopyToDevice`)
  psgpu#k     add on the tower devices (GPUs, or virtual CPU devices), k pieces per tensor on
              k consecutive devices, successive tensors round robin (`CopyToDevice`)
  xring#k     k rings, each over 1/k of the tensor (`ring.Ring`)
  nccl        NCCL all-sum (GPUs only; `nccl.NcclAllSum`)
  collective  TensorFlow's collective all-reduce (`collective.CollectiveAllReduce`)
`a/b` applies `a` within each worker task and `b` across tasks (`Hierarchical`); ranges
`a:limit:b` choose by element count (`BySize`).
"""
from tfhp.ops import allreduce
from tfhp.ops import allreduce_spec
from tfhp.ops import collective
from tfhp.ops import nccl
from tfhp.ops import ring


# How each algorithm of `allreduce_spec.ALGORITHMS` is built: (alg, tower_devices, cpu_device)
# -> AllReduce. A new algorithm is its class, a row there and an entry here (docs/extending.md).
BUILDERS = {
    'pscpu': lambda alg, towers, cpu: allreduce.CopyToDevice([cpu], shards=alg.shards),
    'psgpu': lambda alg, towers, cpu: allreduce.CopyToDevice(towers, shards=alg.shards),
    'xring': lambda alg, towers, cpu: ring.Ring(num_rings=alg.shards),
    'nccl': lambda alg, towers, cpu: nccl.NcclAllSum(),
    'collective': lambda alg, towers, cpu: collective.CollectiveAllReduce(),
}


def register(algorithm, builder):
    """Adds an all-reduce algorithm at run time: its `allreduce_spec.Algorithm` row and its
    builder(alg, tower_devices, cpu_device) -> AllReduce (docs/extending.md)."""
    if algorithm.name in allreduce_spec.ALGORITHMS:
        raise ValueError('all-reduce algorithm %r is registered twice' % algorithm.name)
    allreduce_spec.ALGORITHMS[algorithm.name] = algorithm
    BUILDERS[algorithm.name] = builder


def _algorithm(alg, tower_devices, cpu_device):
    return BUILDERS[alg.name](alg, tower_devices, cpu_device)


def from_spec(spec, tower_devices, cpu_device):
    """The AllReduce for an all-reduce spec.

    Args:
      spec: e.g. 'xring', 'pscpu:32k:xring', 'nccl/xring' (see `allreduce_spec`).
      tower_devices: the devices the reduction runs over (`psgpu` reduces on them).
      cpu_device: the host CPU (`pscpu` reduces there).
    Returns:
      An `allreduce.AllReduce`.
    Raises:
      ValueError: the spec is malformed.
    """
    ranges = []
    for rng in allreduce_spec.parse(spec):
        algorithm = _algorithm(rng.inner, tower_devices, cpu_device)
        if rng.outer is not None:
            algorithm = allreduce.Hierarchical(
                algorithm, _algorithm(rng.outer, tower_devices, cpu_device))
        ranges.append((rng.limit, algorithm))
    return ranges[0][1] if len(ranges) == 1 else allreduce.BySize(ranges)

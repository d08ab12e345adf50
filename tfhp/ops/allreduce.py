"""All-reduce over the devices of one graph: the interface and the copy-based algorithms.

An `AllReduce` is called with `tensors` (one per device, each already on its device) and the
matching `devices`; it returns the element-wise sum once per device, each result placed on its
device with the input's shape and dtype. Every device gets a bitwise identical result (each
element is added up once, in one place, then copied), which is what keeps replicated variable
copies identical.

This module owns the interface and the algorithms built from plain adds and copies:

- `CopyToDevice`: send every tensor to a reduce device, add there, copy the sum back. With
  `shards=k` each tensor is cut into k pieces reduced on k devices (tf_cnn_benchmarks' `pscpu#k`
  and `psgpu#k`). Each reduce device receives N tensors: the simplest and, on a shared-memory
  host, often the fastest choice.
- `Hierarchical`: an inner all-reduce within groups of devices, an outer one across the groups'
  leaders, then a copy back within each group (the two-level `a/b` specs and
  tf_cnn_benchmarks' `--hierarchical_copy`).
- `BySize`: picks an algorithm by the tensor's element count (the `alg:limit:alg` ranges).
- `Compressed`: compresses before communication (a summable `tfhp.compression` scheme, e.g.
  a 16-bit cast) and decompresses after.

The ring (`tfhp.ops.ring`), NCCL (`tfhp.ops.nccl`) and TensorFlow collective
(`tfhp.ops.collective`) algorithms implement the same interface.
"""
import abc

import tensorflow.compat.v1 as tf


def split_sizes(total, parts):
    """`parts` non-negative sizes, as equal as possible, adding up to `total`."""
    base, extra = divmod(total, parts)
    return [base + 1 if i < extra else base for i in range(parts)]


def num_elements(tensor):
    """The static element count of `tensor`; ValueError naming it if the shape is not static."""
    if not tensor.shape.is_fully_defined():
        raise ValueError('all-reduce needs a static shape; %s has shape %s'
                         % (tensor.name, tensor.shape))
    return tensor.shape.num_elements()


def split_flat(tensor, sizes, device):
    """Flattens `tensor` on `device` and cuts it into pieces of `sizes` elements."""
    with tf.device(device):
        flat = tf.reshape(tensor, [-1])
        return tf.split(flat, sizes) if len(sizes) > 1 else [flat]


def join_flat(pieces, shape, device):
    """Concatenates 1-D `pieces` on `device` and reshapes the result to `shape`."""
    with tf.device(device):
        flat = tf.concat(pieces, 0) if len(pieces) > 1 else tf.identity(pieces[0])
        return tf.reshape(flat, shape)


def copy_to(tensor, device):
    """`tensor` on `device` (an explicit identity: the cross-device copy TF inserts)."""
    with tf.device(device):
        return tf.identity(tensor)


class AllReduce(abc.ABC):
    """Sums one tensor per device and returns the sum on every device."""

    def __call__(self, tensors, devices):
        """All-reduces (sums) `tensors`.

        Args:
          tensors: one tensor per device, each on its device, all of one shape and dtype.
          devices: the device of each tensor.
        Returns:
          A list with the sum for each device, on that device.
        Raises:
          ValueError: counts, shapes or dtypes do not match.
        """
        tensors, devices = list(tensors), list(devices)
        if not tensors or len(tensors) != len(devices):
            raise ValueError('all-reduce needs one tensor per device; got %d tensors for %d '
                             'devices' % (len(tensors), len(devices)))
        first = tensors[0]
        for tensor in tensors[1:]:
            if tensor.dtype != first.dtype or not tensor.shape.is_compatible_with(first.shape):
                raise ValueError('all-reduce inputs differ: %s %s %s vs %s %s %s' % (
                    first.name, first.dtype.name, first.shape, tensor.name, tensor.dtype.name,
                    tensor.shape))
        if len(tensors) == 1:
            return tensors
        return self._all_reduce(tensors, devices)

    @abc.abstractmethod
    def _all_reduce(self, tensors, devices):
        """Sums two or more validated tensors; see `__call__`."""


class CopyToDevice(AllReduce):
    """Adds on reduce devices and copies the sum back ("shuffle" reduction).

    Args:
      reduce_devices: where the adds run; successive tensors take successive devices, round
        robin, to spread the load. None means the devices of each call.
      shards: cut each tensor into this many pieces, each reduced on the next reduce device
        (capped at the tensor's element count).
    """

    def __init__(self, reduce_devices=None, shards=1):
        if shards < 1:
            raise ValueError('shards must be >= 1, got %d' % shards)
        self._reduce_devices = list(reduce_devices) if reduce_devices else None
        self._shards = shards
        self._next = 0

    def _targets(self, devices, count):
        pool = self._reduce_devices or devices
        targets = [pool[(self._next + i) % len(pool)] for i in range(count)]
        self._next = (self._next + count) % len(pool)
        return targets

    def _all_reduce(self, tensors, devices):
        count = max(1, min(self._shards, num_elements(tensors[0])))
        targets = self._targets(devices, count)
        if count == 1:
            with tf.device(targets[0]):
                total = tf.add_n(tensors)
            return [copy_to(total, d) for d in devices]
        sizes = split_sizes(num_elements(tensors[0]), count)
        pieces = [split_flat(t, sizes, d) for t, d in zip(tensors, devices)]
        sums = []
        for s, target in enumerate(targets):
            with tf.device(target):
                sums.append(tf.add_n([p[s] for p in pieces]))
        return [join_flat(sums, tensors[0].shape, d) for d in devices]


def _worker_of(device):
    spec = tf.DeviceSpec.from_string(device)
    return spec.job, spec.replica, spec.task


class Hierarchical(AllReduce):
    """Two levels: `inner` within each group, `outer` across group leaders, copy back.

    Args:
      inner: the AllReduce used among the devices of one group.
      outer: the AllReduce used among the groups' first devices.
      group_size: devices per group, consecutive in device order; None groups devices by
        worker task (job, replica, task of the device string), the `alg/alg` spec meaning.
    """

    def __init__(self, inner, outer, group_size=None):
        if group_size is not None and group_size < 1:
            raise ValueError('group_size must be >= 1, got %d' % group_size)
        self._inner = inner
        self._outer = outer
        self._group_size = group_size

    def _groups(self, devices):
        if self._group_size:
            indices = list(range(len(devices)))
            return [indices[i:i + self._group_size]
                    for i in range(0, len(devices), self._group_size)]
        groups = {}
        for i, device in enumerate(devices):
            groups.setdefault(_worker_of(device), []).append(i)
        return list(groups.values())

    def _all_reduce(self, tensors, devices):
        groups = self._groups(devices)
        if len(groups) == 1:
            return self._inner(tensors, devices)
        leaders = [self._inner([tensors[i] for i in g], [devices[i] for i in g])[0]
                   for g in groups]
        totals = self._outer(leaders, [devices[g[0]] for g in groups])
        results = [None] * len(tensors)
        for group, total in zip(groups, totals):
            for i in group:
                results[i] = copy_to(total, devices[i])
        return results


class BySize(AllReduce):
    """Chooses an algorithm by the tensor's element count.

    Args:
      ranges: [(limit, algorithm), ...] with increasing limits; a tensor of n elements goes to
        the first algorithm whose limit is None or >= n.
    """

    def __init__(self, ranges):
        if not ranges or ranges[-1][0] is not None:
            raise ValueError('BySize ranges must end with an unlimited (None) range')
        self._ranges = list(ranges)

    def _all_reduce(self, tensors, devices):
        size = num_elements(tensors[0])
        for limit, algorithm in self._ranges:
            if limit is None or size <= limit:
                return algorithm(tensors, devices)
        raise AssertionError('unreachable: the last range is unlimited')


class Compressed(AllReduce):
    """Compresses floating tensors for the reduction and decompresses the sums afterwards.

    The inner algorithm adds payloads, so the scheme must be summable: a float16/bfloat16 cast
    halves the bytes moved at the cost of precision, the sum itself being computed in the
    narrow dtype (float16 keeps ~3 significant digits, bfloat16 ~2).

    Args:
      inner: the AllReduce run on the payloads.
      compressor: a summable `tfhp.compression.base.Compressor`.
    Raises:
      ValueError: the compressor's payloads cannot be summed.
    """

    def __init__(self, inner, compressor):
        if not compressor.summable:
            raise ValueError('gradient compression %r cannot be summed by an all-reduce'
                             % compressor.name)
        self._inner = inner
        self._compressor = compressor

    def _all_reduce(self, tensors, devices):
        original = tensors[0].dtype
        if not original.is_floating:
            return self._inner(tensors, devices)
        payloads = []
        for tensor, device in zip(tensors, devices):
            with tf.device(device):
                payloads.append(self._compressor.compress(tensor))
        results = []
        for payload, device in zip(self._inner(payloads, devices), devices):
            with tf.device(device):
                results.append(self._compressor.decompress(payload, original))
        return results

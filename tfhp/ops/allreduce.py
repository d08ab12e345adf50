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
- `Compressed`: compresses before communication (a `tfhp.compression` scheme) and
  decompresses after. A summable payload (a 16-bit cast) is all-reduced as it is; one that
  cannot be summed (sign, top-k, random-k) is all-gathered along the algorithm's own topology
  (`AllReduce.all_gather`), then every device decompresses every payload and adds them.

Which all-gather each algorithm's topology becomes (`tfhp.ops.allgather`):

  CopyToDevice   `star` through the reduce device (the next one, round robin per tensor;
                 payloads are not cut into shards)
  Ring           `ring` around the same device order (one ring: payloads are not cut)
  Hierarchical   `hierarchical` over the same groups, the leaders gathering with the outer
                 algorithm's all-gather (one group: the inner algorithm's)
  BySize         the all-gather of the algorithm the tensor's size picks
  NCCL, collective  none: they refuse payloads that cannot be summed

The ring (`tfhp.ops.ring`), NCCL (`tfhp.ops.nccl`) and TensorFlow collective
(`tfhp.ops.collective`) algorithms implement the same interface.
"""
import abc

import tensorflow.compat.v1 as tf

from tfhp.ops import allgather


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

    def all_gather(self, payloads, devices, size):
        """Every device's payload on every device, along this algorithm's topology, for
        payloads that cannot be summed (`tfhp.ops.allgather`).

        Args:
          payloads: one tuple of tensors per device, each on its device.
          devices: the device of each payload.
          size: the element count of the tensor the payloads stand for (`BySize` chooses by
            it).
        Returns:
          gathered[d][s]: payload s on device d.
        Raises:
          ValueError: the algorithm has no all-gather (the default).
        """
        del payloads, devices, size
        raise ValueError('the all-reduce %s cannot carry payloads that cannot be summed (it '
                         'has no all-gather); use a ring, a copy to a device or a hierarchical '
                         'spec of them' % type(self).__name__)


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

    def all_gather(self, payloads, devices, size):
        del size  # a payload goes whole to one reduce device: it is not cut
        return allgather.star(payloads, devices, self._targets(devices, 1)[0])


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

    def all_gather(self, payloads, devices, size):
        groups = self._groups(devices)
        if len(groups) == 1:
            return self._inner.all_gather(payloads, devices, size)
        return allgather.hierarchical(
            payloads, devices, groups,
            outer=lambda bundles, leaders: self._outer.all_gather(bundles, leaders, size))


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

    def _algorithm(self, size):
        for limit, algorithm in self._ranges:
            if limit is None or size <= limit:
                return algorithm
        raise AssertionError('unreachable: the last range is unlimited')

    def _all_reduce(self, tensors, devices):
        return self._algorithm(num_elements(tensors[0]))(tensors, devices)

    def all_gather(self, payloads, devices, size):
        return self._algorithm(size).all_gather(payloads, devices, size)


class Compressed(AllReduce):
    """Compresses floating tensors for the reduction and decompresses the sums afterwards.

    Each device's payload is its compressor's `send` (error feedback, if the scheme keeps it,
    runs on that device). A summable payload is all-reduced by the inner algorithm, the sum
    being computed in the payload's dtype (a 16-bit cast: float16 keeps ~3 significant digits,
    bfloat16 ~2). Any other is all-gathered along the inner algorithm's topology
    (`AllReduce.all_gather`); every device then decompresses the N payloads and adds them, in
    sender order, so every device gets the same bits.

    Args:
      inner: the AllReduce run on the payloads (or whose topology gathers them).
      compressor: a `tfhp.compression.base.Compressor`.
    """

    def __init__(self, inner, compressor):
        self._inner = inner
        self._compressor = compressor

    def _all_reduce(self, tensors, devices):
        if not tensors[0].dtype.is_floating:
            return self._inner(tensors, devices)
        payloads = []
        for tensor, device in zip(tensors, devices):
            with tf.device(device):
                payloads.append(self._compressor.send(tensor))
        if self._compressor.summable:
            return self._reduce(payloads, devices, tensors[0])
        return self._gather_and_add(payloads, devices, tensors[0])

    def _reduce(self, payloads, devices, like):
        results = []
        for payload, device in zip(self._inner(payloads, devices), devices):
            with tf.device(device):
                results.append(self._compressor.decompress(payload, like.dtype, like.shape))
        return results

    def _gather_and_add(self, payloads, devices, like):
        gathered = self._inner.all_gather(payloads, devices, num_elements(like))
        results = []
        for mine, device in zip(gathered, devices):
            with tf.device(device):
                # A stack reduced, not add_n: grappler reorders an AddN's inputs on some
                # devices and not others, and the copies would drift apart by a rounding.
                results.append(tf.reduce_sum(tf.stack(
                    [self._compressor.decompress(p, like.dtype, like.shape) for p in mine]), 0))
        return results

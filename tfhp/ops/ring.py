"""Ring all-reduce from per-device chunk ops: reduce-scatter, then all-gather.

Each of the N devices cuts its tensor into N chunks. Reduce-scatter: in step s (0..N-2) device i
sends its partial sum of chunk (i - s) mod N to device i + 1, which adds its own; after N - 1
steps device i holds the complete sum of chunk (i + 1) mod N, added up in exactly one place.
All-gather: the complete chunks travel N - 1 more steps around the ring, copied, not re-added,
so every device ends with bitwise the same values. Each device sends and receives
2 (N - 1) / N of the tensor, the least any point-to-point algorithm can move, in 2 (N - 1)
latency-bound steps, which is why small tensors should be packed first (`tfhp.ops.packing`).
Payloads that cannot be summed go around the same ring as an all-gather (`tfhp.ops.allgather`).
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import allgather
from tfhp.ops import allreduce


def _one_ring(flats, devices):
    """All-reduces 1-D `flats` around the ring `devices`; returns each device's chunks."""
    n = len(devices)
    sizes = allreduce.split_sizes(int(flats[0].shape[0]), n)
    # chunks[i][c]: device i's running value of chunk c.
    chunks = [allreduce.split_flat(f, sizes, d) for f, d in zip(flats, devices)]
    for step in range(n - 1):
        for i in range(n):
            chunk, dst = (i - step) % n, (i + 1) % n
            # Device dst updates a chunk no device sends in this step, so in-place is safe.
            with tf.device(devices[dst]):
                chunks[dst][chunk] = tf.add(chunks[i][chunk], chunks[dst][chunk])
    for step in range(n - 1):
        for chunk in range(n):
            src = (chunk - 1 + step) % n
            dst = (src + 1) % n
            chunks[dst][chunk] = allreduce.copy_to(chunks[src][chunk], devices[dst])
    return chunks


class Ring(allreduce.AllReduce):
    """Ring all-reduce (tf_cnn_benchmarks' `xring`).

    Args:
      num_rings: cut each tensor into this many parts, each reduced by its own ring; odd rings
        run in the reverse device order so both directions of each link carry data.
    """

    def __init__(self, num_rings=1):
        if num_rings < 1:
            raise ValueError('num_rings must be >= 1, got %d' % num_rings)
        self._num_rings = num_rings

    def _all_reduce(self, tensors, devices):
        total = allreduce.num_elements(tensors[0])
        rings = max(1, min(self._num_rings, total))
        parts = [allreduce.split_flat(t, allreduce.split_sizes(total, rings), d)
                 for t, d in zip(tensors, devices)]
        n = len(devices)
        # gathered[i][r][c]: on device i, chunk c of ring r's part.
        gathered = [[None] * rings for _ in range(n)]
        with tf.name_scope('ring'):
            for r in range(rings):
                order = list(range(n)) if r % 2 == 0 else list(reversed(range(n)))
                result = _one_ring([parts[i][r] for i in order], [devices[i] for i in order])
                for position, i in enumerate(order):
                    gathered[i][r] = result[position]
            return [allreduce.join_flat([c for ring in gathered[i] for c in ring],
                                        tensors[i].shape, devices[i]) for i in range(n)]

    def all_gather(self, payloads, devices, size):
        del size  # one ring in device order: a payload is not cut into parts
        return allgather.ring(payloads, devices)

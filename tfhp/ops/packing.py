"""Gradient packing: few large tensors cross devices instead of many small ones.

Every all-reduce step pays a latency per tensor (a ring pays 2 (N - 1) of them), so many small
gradients cost more than their bytes. A `Plan`, made once from one tower's gradients, says how
to concatenate the (flattened) gradients into buffers and optionally cut each buffer into equal
splits; `pack` applies it on each tower, the buffers are all-reduced, and `unpack` restores the
original tensors. Tensors of different dtypes never share a buffer.

Three policies, the first two after tf_cnn_benchmarks' two flags:
- `concat_into(tensors, num_packs)` (`--gradient_repacking=K`): everything of one dtype in one
  buffer, cut into K equal packs.
- `group_small(tensors, max_bytes, max_group)` (`--agg_small_grads_max_bytes`): consecutive
  tensors of at most max_bytes each join a buffer of at most max_bytes and max_group tensors;
  larger tensors pass through untouched.
- `buckets(tensors, bucket_bytes)` (`--fusion_bucket_bytes`, Horovod's tensor fusion): the
  tensors taken in backward order (last first) fill buffers of at most bucket_bytes; larger
  tensors pass alone. Each buffer's concat depends on its own tensors only, so when the tensors
  are gradients the first buffer's all-reduce can start while the backward pass still computes
  the earlier layers' gradients: the gradients leave as soon as their bucket is full.
"""
import collections

import tensorflow.compat.v1 as tf

from tfhp.ops import allreduce

Buffer = collections.namedtuple('Buffer', [
    'indices',     # positions (in the packed list) of the tensors concatenated, in order
    'num_splits',  # the buffer is cut into this many equal packs
])

Plan = collections.namedtuple('Plan', [
    'buffers',  # list of Buffer
    'shapes',   # static shape of each original tensor
])


def _static_size(tensor):
    if not tensor.shape.is_fully_defined():
        raise ValueError('packing needs static shapes; %s has shape %s'
                         % (tensor.name, tensor.shape))
    return tensor.shape.num_elements()


def _shapes(tensors):
    for tensor in tensors:
        _static_size(tensor)
    return [t.shape for t in tensors]


def concat_into(tensors, num_packs):
    """A plan: one buffer per dtype holding every tensor, cut into `num_packs` packs.

    Args:
      tensors: one tower's tensors (e.g. gradients), in a fixed order.
      num_packs: packs per buffer (capped at the buffer's element count).
    Returns:
      A `Plan`.
    """
    if num_packs < 1:
        raise ValueError('num_packs must be >= 1, got %d' % num_packs)
    by_dtype = collections.OrderedDict()
    for i, tensor in enumerate(tensors):
        by_dtype.setdefault(tensor.dtype, []).append(i)
    buffers = []
    for indices in by_dtype.values():
        total = sum(_static_size(tensors[i]) for i in indices)
        buffers.append(Buffer(indices, max(1, min(num_packs, total))))
    return Plan(buffers, _shapes(tensors))


def group_small(tensors, max_bytes, max_group):
    """A plan: runs of small consecutive tensors share a buffer; large ones stay alone.

    Args:
      tensors: one tower's tensors, in a fixed order.
      max_bytes: a tensor of at most this many bytes may be grouped; a buffer holds at most
        this many bytes.
      max_group: a buffer holds at most this many tensors.
    Returns:
      A `Plan`.
    """
    if max_bytes < 1 or max_group < 1:
        raise ValueError('max_bytes and max_group must be >= 1, got %d, %d'
                         % (max_bytes, max_group))
    return Plan(_runs(tensors, range(len(tensors)), max_bytes, max_group), _shapes(tensors))


def buckets(tensors, bucket_bytes):
    """A plan: the tensors in backward order (the last first), fused into buffers of at most
    `bucket_bytes` each, in that order; a tensor larger than that passes alone.

    Given the gradients of variables in the order the forward pass created them, the first
    buffer holds the last layers' gradients, which the backward pass computes first. A buffer
    closes when the next tensor would overflow it (or has another dtype), so its concat, and the
    all-reduce of it, wait for its own tensors only (Horovod's tensor fusion, with the order
    fixed when the graph is built instead of negotiated at run time).

    Args:
      tensors: one tower's tensors (e.g. gradients), in the variables' forward order.
      bucket_bytes: most bytes of a buffer.
    Returns:
      A `Plan` whose buffers are in backward order, each buffer's tensors last first.
    """
    if bucket_bytes < 1:
        raise ValueError('bucket_bytes must be >= 1, got %d' % bucket_bytes)
    backward = range(len(tensors) - 1, -1, -1)
    return Plan(_runs(tensors, backward, bucket_bytes, len(tensors)), _shapes(tensors))


def _runs(tensors, order, max_bytes, max_group):
    """Buffers of consecutive tensors (taken in `order`) of one dtype, each of at most max_bytes
    and max_group tensors; a tensor of more than max_bytes is a buffer alone."""
    buffers, current, current_bytes = [], [], 0
    for i in order:
        tensor = tensors[i]
        size = _static_size(tensor) * tensor.dtype.size
        fits = (current and tensor.dtype == tensors[current[0]].dtype and
                current_bytes + size <= max_bytes and len(current) < max_group)
        if current and not fits:
            buffers.append(Buffer(current, 1))
            current, current_bytes = [], 0
        if size > max_bytes:
            buffers.append(Buffer([i], 1))
        else:
            current.append(i)
            current_bytes += size
    if current:
        buffers.append(Buffer(current, 1))
    return buffers


def _passes_through(buffer):
    return len(buffer.indices) == 1 and buffer.num_splits == 1


def pack(tensors, plan):
    """Packs one tower's tensors (ops go on the current device).

    Args:
      tensors: the tensors the plan was made from (or another tower's, of the same shapes).
      plan: a `Plan`.
    Returns:
      The list of packed tensors, to be all-reduced position by position across towers.
    """
    packed = []
    for buffer in plan.buffers:
        if _passes_through(buffer):
            packed.append(tensors[buffer.indices[0]])
            continue
        flat = tf.concat([tf.reshape(tensors[i], [-1]) for i in buffer.indices], 0)
        if buffer.num_splits == 1:
            packed.append(flat)
        else:
            total = sum(plan.shapes[i].num_elements() for i in buffer.indices)
            packed.extend(tf.split(flat, allreduce.split_sizes(total, buffer.num_splits)))
    return packed


def unpack(packed, plan):
    """Inverse of `pack` for one tower: the original tensors, in their original order."""
    tensors = [None] * len(plan.shapes)
    position = 0
    for buffer in plan.buffers:
        pieces = packed[position:position + buffer.num_splits]
        position += buffer.num_splits
        if _passes_through(buffer):
            tensors[buffer.indices[0]] = pieces[0]
            continue
        flat = tf.concat(pieces, 0) if len(pieces) > 1 else pieces[0]
        sizes = [plan.shapes[i].num_elements() for i in buffer.indices]
        for i, part in zip(buffer.indices, tf.split(flat, sizes)):
            tensors[i] = tf.reshape(part, plan.shapes[i])
    if position != len(packed):
        raise ValueError('unpack got %d tensors; the plan makes %d' % (len(packed), position))
    return tensors

"""TensorFlow's collective exchange (CollectiveReduceV2, CollectiveBcast*V2): the op builders
every collective in tfhp uses, and the all-reduce algorithm over the devices of one graph.

Each participating device runs one op with the same group key (naming the set of devices) and
instance key (naming this reduction); the runtime's collective executor does the exchange. The
members may be in one graph (`CollectiveAllReduce`) or one per worker process
(`tfhp.replication.collective_workers`, `tfhp.cluster.control.all_reduce_max`).
It runs in a plain in-process session on virtual CPU devices as well as on GPUs (checked by
tests/ops/allreduce_test.py on this TensorFlow build).
"""
import itertools

import tensorflow.compat.v1 as tf

from tfhp.ops import allreduce

# Keys are unique per process: a session resolves groups and instances by key alone, so two
# all-reduces (or two groups) must never share one.
_GROUP_KEYS = itertools.count(1)
_INSTANCE_KEYS = itertools.count(1)


def reduce(tensor, group_size, group_key, instance_key, merge_op='Add', final_op='Id',
           timeout_s=0.0, communication_hint='auto', max_subdivs=0):
    """One member's op of a collective reduction (CollectiveReduceV2), on the current device.

    Every member of the group (group_size devices, in one graph or in one graph per worker)
    runs one op with the same keys; each gets merge_op over all members' tensors, then final_op
    ('Id', or 'Div' by group_size: the mean).

    Args:
      tensor: this member's tensor.
      group_size, group_key: the group's size and key (the same set of devices each time).
      instance_key: this reduction's key, unique within the group.
      merge_op: 'Add', 'Mul', 'Min' or 'Max'.
      final_op: 'Id' or 'Div'.
      timeout_s: bound on waiting for the other members (0: none).
      communication_hint: 'auto', 'ring' or 'nccl'.
      max_subdivs: the ring splits each member's share of the tensor into at most this many
        chunks, each a transfer of its own in flight (max_subdivs_per_device); 0: TensorFlow's
        choice (chunks of at most 4 MB).
    """
    return tf.raw_ops.CollectiveReduceV2(
        input=tensor, group_size=group_size, group_key=group_key, instance_key=instance_key,
        ordering_token=[], merge_op=merge_op, final_op=final_op,
        communication_hint=communication_hint, timeout_seconds=timeout_s,
        max_subdivs_per_device=max_subdivs or -1)


def broadcast(tensor_or_spec, group_size, group_key, instance_key, timeout_s=0.0):
    """One member's op of a collective broadcast (CollectiveBcastSend/RecvV2).

    Args:
      tensor_or_spec: the sender's tensor, or (shape, dtype) for a receiver.
      group_size, group_key, instance_key, timeout_s: as for `reduce`.
    Returns:
      The sender's send op, or the receiver's received tensor.
    """
    if isinstance(tensor_or_spec, tuple):
        shape, dtype = tensor_or_spec
        return tf.raw_ops.CollectiveBcastRecvV2(
            group_size=group_size, group_key=group_key, instance_key=instance_key, shape=shape,
            T=dtype, timeout_seconds=timeout_s)
    return tf.raw_ops.CollectiveBcastSendV2(
        input=tensor_or_spec, group_size=group_size, group_key=group_key,
        instance_key=instance_key, timeout_seconds=timeout_s)


class CollectiveAllReduce(allreduce.AllReduce):
    """Sums with one collective reduce op (`reduce`) per device of one graph.

    Args:
      communication_hint: 'auto', 'ring' or 'nccl' (the collective implementation to prefer).
    """

    def __init__(self, communication_hint='auto'):
        self._communication_hint = communication_hint
        self._group_keys = {}

    def _all_reduce(self, tensors, devices):
        group = tuple(devices)
        if group not in self._group_keys:
            self._group_keys[group] = next(_GROUP_KEYS)
        instance_key = next(_INSTANCE_KEYS)
        results = []
        for tensor, device in zip(tensors, devices):
            with tf.device(device):
                results.append(reduce(tensor, len(devices), self._group_keys[group],
                                      instance_key,
                                      communication_hint=self._communication_hint))
        return results

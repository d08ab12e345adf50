"""TensorFlow's collective all-reduce (CollectiveReduceV2) across the devices of one graph.

Each participating device runs one op with the same group key (naming the set of devices) and
instance key (naming this reduction); the runtime's collective executor does the exchange.
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


class CollectiveAllReduce(allreduce.AllReduce):
    """Sums with one collective reduce op per device.

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
                results.append(tf.raw_ops.CollectiveReduceV2(
                    input=tensor, group_size=len(devices), group_key=self._group_keys[group],
                    instance_key=instance_key, ordering_token=[], merge_op='Add',
                    final_op='Id', communication_hint=self._communication_hint))
        return results

"""NCCL all-sum over the GPUs of one process.

NCCL kernels exist only for GPUs: on any other device the op would fail deep inside graph
execution, so `NcclAllSum` refuses non-GPU devices when the graph is built, and `tfhp.config`
refuses `--all_reduce_spec=nccl` without `--device=gpu` before that.
"""
import itertools

import tensorflow.compat.v1 as tf

from tfhp.ops import allreduce

# Every NCCL all-reduce needs a name shared by its per-device ops and by no other all-reduce.
_SHARED_NAMES = itertools.count()


def is_gpu(device):
    """Whether `device` (a device string) names a GPU."""
    return (tf.DeviceSpec.from_string(device).device_type or '').upper() == 'GPU'


class NcclAllSum(allreduce.AllReduce):
    """Sums with one NCCL all-reduce across the devices (GPUs only)."""

    def _all_reduce(self, tensors, devices):
        others = [d for d in devices if not is_gpu(d)]
        if others:
            raise ValueError('NCCL all-reduce runs on GPUs only; got %s (use xring, pscpu or '
                             'collective on other devices)' % ', '.join(others))
        shared_name = 'tfhp_nccl_%d' % next(_SHARED_NAMES)
        results = []
        for tensor, device in zip(tensors, devices):
            with tf.device(device):
                results.append(tf.raw_ops.NcclAllReduce(
                    input=tensor, reduction='sum', num_devices=len(devices),
                    shared_name=shared_name))
        return results

"""A new all-reduce algorithm: a binary tree. Partial sums go up the tree in log2(N) rounds,
then the root's sum is copied down to every device.

Registering it makes `tree` a name of `--all_reduce_spec`, in every form the syntax allows
(`tree`, `pscpu:32k:tree`, `tree/xring`). The recipe is in docs/extending.md.

  python examples/extending/tree_allreduce.py
"""
import numpy as np
import tensorflow.compat.v1 as tf

from tfhp import session as session_lib
from tfhp.ops import allreduce
from tfhp.ops import allreduce_builder
from tfhp.ops import allreduce_spec


class Tree(allreduce.AllReduce):
    """Adds device i+s into device i for s = 1, 2, 4, ..., then copies device 0's sum to all.

    Each element is added once, in one place, so every device gets the same bits (the
    interface's contract, which keeps replicated copies identical).
    """

    def _all_reduce(self, tensors, devices):
        partial = list(tensors)
        stride = 1
        while stride < len(devices):
            for i in range(0, len(devices) - stride, 2 * stride):
                with tf.device(devices[i]):
                    partial[i] = partial[i] + partial[i + stride]
            stride *= 2
        return [allreduce.copy_to(partial[0], device) for device in devices]


allreduce_builder.register(
    allreduce_spec.Algorithm('tree', sharded=False, gpu_only=False,
                             doc='partial sums up a binary tree, the total copied down'),
    lambda alg, tower_devices, cpu_device: Tree())


def main(num_devices=5):
    """Sums a random tensor per device with the spec 'tree'; returns (sums, numpy's sum)."""
    devices = ['/cpu:%d' % d for d in range(num_devices)]
    values = np.random.RandomState(0).normal(size=[num_devices, 3, 4]).astype(np.float32)
    with tf.Graph().as_default():
        tensors = []
        for value, device in zip(values, devices):
            with tf.device(device):
                tensors.append(tf.constant(value))
        algorithm = allreduce_builder.from_spec('tree', devices, '/cpu:0')
        with tf.Session(config=session_lib.config_proto(num_cpu_devices=num_devices)) as sess:
            sums = sess.run(algorithm(tensors, devices))
    print('tree over %d devices: largest error %.2g' % (
        num_devices, max(np.max(np.abs(s - values.sum(axis=0))) for s in sums)))
    return sums, values.sum(axis=0)


if __name__ == '__main__':
    main()

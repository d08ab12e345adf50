"""Replicated: a copy of every variable on every tower; gradients all-reduced, each copy updated.

Per step: each tower's gradients are (optionally) packed into few buffers
(`tfhp.ops.packing`), all-reduced across the towers by the configured `AllReduce`
(`tfhp.ops.allreduce` and friends), unpacked, divided by the number of towers (the mean, by the
manager contract) and applied by each tower's own optimizer to its own copies. Every all-reduce
gives each tower bitwise the same sum and each tower runs the same update ops on it, so the
copies stay bitwise identical (tested). Variable layout, initial copies and checkpoint names:
`tfhp.replication.per_tower_copies`.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import packing
from tfhp.ops import scopes
from tfhp.replication import base
from tfhp.replication import per_tower_copies


class Replicated(per_tower_copies.PerTowerCopies):
    """Per-tower copies kept equal by all-reducing the gradients.

    Args:
      tower_devices: device of each tower.
      all_reduce: an `tfhp.ops.allreduce.AllReduce` (called once per gradient or pack).
      packer: None, or plan_fn(tensors) -> `packing.Plan` (e.g. a partial of
        `packing.concat_into`, `packing.group_small` or `packing.buckets`), applied to each
        tower's gradients; each buffer is all-reduced on its own, so with `packing.buckets`
        the first bucket's all-reduce starts while the backward pass still runs.
    """

    def __init__(self, tower_devices, all_reduce, packer=None):
        super().__init__(tower_devices)
        self._all_reduce = all_reduce
        self._packer = packer

    def _sum_over_towers(self, grads):
        """grads[t][v] -> summed[t][v], the sum over towers placed on each tower."""
        devices = self._tower_devices
        plan = self._packer(grads[0]) if self._packer else None
        packed = grads
        if plan is not None:
            packed = []
            for t, device in enumerate(devices):
                with tf.device(device):
                    packed.append(packing.pack(grads[t], plan))
        # reduced[p][t]: pack p's sum on tower t.
        reduced = [self._all_reduce([tower[p] for tower in packed], devices)
                   for p in range(len(packed[0]))]
        summed = []
        for t, device in enumerate(devices):
            mine = [per_pack[t] for per_pack in reduced]
            if plan is not None:
                with tf.device(device):
                    mine = packing.unpack(mine, plan)
            summed.append(mine)
        return summed

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        num_towers = len(tower_grads)
        # Variables without a gradient (unused by the loss) take no part, on every tower alike.
        kept = [v for v, (g, _) in enumerate(tower_grads[0]) if g is not None]
        with tf.name_scope(scopes.AGGREGATE):
            grads = []
            for t, tower in enumerate(tower_grads):
                with tf.device(self._tower_devices[t]):
                    grads.append([tf.convert_to_tensor(tower[v][0]) for v in kept])
            summed = self._sum_over_towers(grads)
            means = []
            for t, device in enumerate(self._tower_devices):
                with tf.device(device):
                    means.append([g / num_towers if num_towers > 1 else g for g in summed[t]])
        with tf.name_scope(scopes.APPLY):
            updates = [self._apply_on_tower(t, optimizer_fn,
                                            [(g, tower_grads[t][v][1])
                                             for g, v in zip(means[t], kept)])
                       for t in range(num_towers)]
            train_op = self._increment(updates, global_step)
        return base.Update(train_op=train_op, post_init_ops=self.post_init_ops(), hooks=[])

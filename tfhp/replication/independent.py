"""Independent: a copy of every variable per tower and no aggregation at all.

Each tower applies its own gradients to its own copies; the copies drift apart after the first
step. This breaks the manager contract on purpose (gradients are not averaged): it is the
baseline that prices communication, since a step costs compute and nothing else.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.replication import base
from tfhp.replication import per_tower_copies


class Independent(per_tower_copies.PerTowerCopies):
    """Per-tower copies, each trained on its own tower's gradients only.

    Args:
      tower_devices: device of each tower.
    """

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        with tf.name_scope(scopes.APPLY):
            updates = [self._apply_on_tower(t, optimizer_fn,
                                            [(g, v) for g, v in tower if g is not None])
                       for t, tower in enumerate(tower_grads)]
            train_op = self._increment(updates, global_step)
        return base.Update(train_op=train_op, post_init_ops=self.post_init_ops(), hooks=[])

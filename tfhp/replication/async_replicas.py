"""Between-graph parameter server, asynchronous: each worker applies its own gradients.

Each worker means its towers' gradients on its own CPU first, so it sends one gradient per
variable to the ps per step whatever its number of towers, then applies it to the shared
variables at once: no worker waits for another, so a slow or dead worker slows or stops no one.
Variables live where the placement manager (a `ParameterServer` over the ps tasks) puts them.

Every update's gradient staleness is measured (`tfhp.replication.staleness`, whose remedies it
also takes): an `AsyncReplicas` is a `Staleness` over the update alone, however it is built. It
serves in-graph replicas too (`tfhp.runner.async_runner.build_replica_steps`, one apply per
replica). Its counters are local variables: run `tf.local_variables_initializer()` as well.

Staged reads (`--staged_vars`, a `ParameterServer(staged_vars=True)` placement): a step computes
on the weights its worker's staging areas got at its previous step, and refills them from the
ps variables before it applies its own gradient, so a worker's weights never hold its own last
update (one step stale on its own), nor the others' updates that landed since that refill. The
staleness counts start at the step's read of global_step, so they leave that extra lag out:
they are a lower bound, and the remedies that act on them (--max_gradient_staleness,
--scale_stale_gradients) are refused with staged reads (`tfhp.config`).
"""

import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.replication import base
from tfhp.replication import staleness
from tfhp.replication import transfer


class _ApplyAlone(base.PlacementDelegate):
    """The update of one worker: its towers' mean gradient, applied to the shared variables."""

    def __init__(self, placement, worker_device, compressor):
        super().__init__(placement)
        self._worker_device = worker_device
        self._compressor = compressor

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        # Staged reads are refilled (read before this update) first: see `AsyncReplicas`.
        tower_grads, reads = self.shared_gradients(tower_grads)
        means = base.after(reads, transfer.mean_over_towers(tower_grads, self._worker_device,
                                                            self._compressor),
                           self._worker_device)
        grads_and_vars = [(transfer.widen(g, v, self._compressor), v) for g, v in means]
        with tf.name_scope(scopes.APPLY):
            train_op = optimizer_fn().apply_gradients(grads_and_vars, global_step=global_step)
        return base.Update(train_op=train_op, post_init_ops=self.post_init_ops(), hooks=[])


class AsyncReplicas(staleness.Staleness):
    """Every worker updates the shared variables alone, one step at a time, measuring each
    update's staleness.

    Create global_step before the towers (each step reads it first).

    Args:
      placement: the manager that places variables (tower_scope, trainable_variables),
        e.g. `ParameterServer(topology.tower_devices, topology.variable_devices)`.
      worker_device: this worker's CPU, where its towers' gradients are meaned and its
        staleness counters live.
      compressor: the `tfhp.compression` scheme its gradients cross the network in (None:
        as they are).
      **remedies: `staleness.Staleness`'s max_staleness, scale_by_staleness, join_after_step
        and join_timeout_s (none by default: measure only).
    """

    def __init__(self, placement, worker_device, compressor=None, **remedies):
        super().__init__(_ApplyAlone(placement, worker_device, compressor), worker_device,
                         **remedies)

"""Between-graph parameter server, asynchronous: each worker applies its own gradients.

Each worker means its towers' gradients on its own CPU first, so it sends one gradient per
variable to the ps per step whatever its number of towers, then applies it to the shared
variables at once: no worker waits for another, so a slow or dead worker slows or stops no one.
Variables live where the placement manager (a `ParameterServer` over the ps tasks) puts them.
"""

import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.replication import base
from tfhp.replication import transfer


def mean_over_towers(tower_grads, device, transfer_dtype=None):
    """This worker's gradient per variable: the mean over its towers, computed on `device`.

    Args:
      tower_grads: tower_grads[t][v] = (gradient, variable); variables are tower 0's.
      device: the worker's CPU.
      transfer_dtype: send the means in this dtype (`transfer.narrow`); None: as they are.
    Returns:
      [(mean gradient, tower 0's variable)] in variable order; None gradients stay None.
    """
    result = []
    with tf.name_scope(scopes.AGGREGATE), tf.device(device):
        for per_var in zip(*tower_grads):
            grads = [g for g, _ in per_var]
            mean = None if grads[0] is None else base.mean_gradient(grads)
            result.append((transfer.narrow(mean, transfer_dtype), per_var[0][1]))
    return result


class AsyncReplicas(base.PlacementDelegate):
    """Every worker updates the shared variables alone, one step at a time.

    Args:
      placement: the manager that places variables (tower_scope, trainable_variables),
        e.g. `ParameterServer(topology.tower_devices, topology.variable_devices)`.
      worker_device: this worker's CPU, where its towers' gradients are meaned.
      transfer_dtype: the dtype its gradients cross the network in (None: their own).
    """

    def __init__(self, placement, worker_device, transfer_dtype=None):
        super().__init__(placement)
        self._worker_device = worker_device
        self._transfer_dtype = transfer_dtype

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        means = mean_over_towers(tower_grads, self._worker_device, self._transfer_dtype)
        grads_and_vars = [(transfer.widen(g, v), v) for g, v in means]
        with tf.name_scope(scopes.APPLY):
            train_op = optimizer_fn().apply_gradients(grads_and_vars, global_step=global_step)
        return base.Update(train_op=train_op, post_init_ops=[], hooks=[])

"""Collective all-reduce across between-graph workers: no parameter server.

Each worker keeps the variables itself: masters on its first tower device, local copies on its
other towers (`MasterCopies`). Per step it means its towers' gradients, all-reduces that mean with
every other worker's through TensorFlow's collective ops (`tfhp.ops.collective.reduce`, ring
over gRPC),
applies the result to its masters with its own optimizer and refreshes its copies. Every worker
applies the same update to the same values, so the masters stay equal; each increments its own
global step, in lockstep. At session start the chief's variables (global step included) are
broadcast to every worker (`tfhp.ops.collective.broadcast`), so workers that initialised with
different values, or did not restore the chief's checkpoint, start equal.

The runtime matches the ops of one collective across processes by (group key, instance key):
keys come from a counter in graph-building order, which is the same on every worker because
every worker builds the same graph. With a packer (`--fusion_bucket_bytes`: `packing.buckets`)
each buffer of the plan is one collective, keyed in the plan's order; the plan depends only on
the gradients' shapes and dtypes in variable order, so every worker makes the same one.
Sessions and servers need
`ConfigProto.experimental.collective_group_leader` (`tfhp.cluster.task.server_proto` sets it).
The group of this manager is GROUP_KEY; other collectives between the same workers take other
keys.

The broadcast and the first refresh are the op 'init_from_chief', which the manager's hook runs
when a session is created; it also sets this worker's flag `variables_from_chief`
(`tfhp.replication.init_flag`), so a worker without the hook fails at its first update, naming
that op, instead of training from its own values.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import collective
from tfhp.ops import packing
from tfhp.ops import scopes
from tfhp.ops import session_hooks
from tfhp.ops import staging
from tfhp.replication import base
from tfhp.replication import init_flag
from tfhp.replication import master_copies
from tfhp.replication import transfer

GROUP_KEY = 1
GROUP_LEADER = '/job:worker/replica:0/task:0'


class CollectiveWorkers(base.VariableManager):
    """Variables on every worker, gradients all-reduced across workers.

    Args:
      tower_devices: this worker's tower devices (the first holds the masters).
      num_workers: workers in the all-reduce.
      is_chief: whether this worker's values are broadcast at start.
      timeout_s: bound on one collective waiting for its peers (0: none).
      compressor: all-reduce the workers' means compressed by this `tfhp.compression`
        scheme, which must be summable (None: as they are); a cast's sum is computed in its
        dtype.
      packer: None (one collective per gradient), or plan_fn(tensors) -> `packing.Plan` (e.g.
        a partial of `packing.buckets`), applied to this worker's means: one collective per
        buffer.
      max_subdivs: chunks in flight per worker in each collective's ring
        (`collective.reduce`); 0: TensorFlow's choice.
    Raises:
      ValueError: the compressor's payloads cannot be summed (the collective all-reduce
        adds them; it has no all-gather here).
    """

    def __init__(self, tower_devices, num_workers, is_chief, timeout_s=0.0,
                 compressor=None, packer=None, max_subdivs=0):
        if compressor is not None and not compressor.summable:
            raise ValueError('gradient compression %r cannot be summed, and the workers\' '
                             'collective all-reduce adds what it carries; use a summable '
                             'scheme, or a ps' % compressor.name)
        self._device = tower_devices[0]
        self._copies = master_copies.MasterCopies(tower_devices, self._device,
                                                copy_first_tower=False)
        self._num_workers = num_workers
        self._is_chief = is_chief
        self._timeout_s = float(timeout_s)
        self._compressor = compressor
        self._packer = packer
        self._max_subdivs = max_subdivs
        self._next_key = 1

    def _instance_key(self):
        key, self._next_key = self._next_key, self._next_key + 1
        return key

    def tower_scope(self, tower):
        return self._copies.tower_scope(tower)

    def trainable_variables(self, tower):
        return self._copies.trainable_variables(tower)

    def _all_reduce_mean(self, tensor):
        return collective.reduce(tensor, self._num_workers, GROUP_KEY, self._instance_key(),
                                 final_op='Div', timeout_s=self._timeout_s,
                                 max_subdivs=self._max_subdivs)

    def _all_reduce_means(self, grads):
        """The mean over workers of each of this worker's (dense) gradients: a collective per
        gradient, or per buffer of the packer's plan, keyed in its order."""
        if self._packer is None:
            return [self._all_reduce_mean(grad) for grad in grads]
        plan = self._packer(grads)
        return packing.unpack([self._all_reduce_mean(buffer)
                               for buffer in packing.pack(grads, plan)], plan)

    def _broadcast_from_chief(self, variables):
        assigns = []
        for var in variables:
            key = self._instance_key()
            with tf.device(var.device):
                if self._is_chief:
                    assigns.append(collective.broadcast(var.read_value(), self._num_workers,
                                                        GROUP_KEY, key, self._timeout_s))
                else:
                    received = collective.broadcast((var.shape, var.dtype.base_dtype),
                                                    self._num_workers, GROUP_KEY, key,
                                                    self._timeout_s)
                    assigns.append(var.assign(received, read_value=False))
        return assigns

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        started = init_flag.InitFlag(
            staging.host_of(self._device), 'variables_from_chief', 'init_from_chief',
            'the variables of this worker were never taken from the chief: run the op `%s` '
            'once per session on every worker (the hook in Update.hooks does: install it)',
            local=True)
        means = started.gated(transfer.mean_over_towers(tower_grads, self._device,
                                                        self._compressor))
        with tf.name_scope(scopes.AGGREGATE), tf.device(self._device):
            # Collectives take dense tensors: a sparse gradient is densified here.
            kept = [(tf.convert_to_tensor(grad), var) for grad, var in means if grad is not None]
            reduced = [(transfer.widen(mean, var, self._compressor), var) for mean, (_, var) in
                       zip(self._all_reduce_means([grad for grad, _ in kept]), kept)]
        with tf.name_scope(scopes.APPLY):
            step_op = optimizer_fn().apply_gradients(reduced, global_step=global_step)
            with tf.control_dependencies([step_op]):
                train_op = self._copies.refresh(self._device)
        start = []
        if self._num_workers > 1:
            start = self._broadcast_from_chief(self._copies.masters() + [global_step])
        with tf.control_dependencies(start):
            init = started.init_op([self._copies.refresh(self._device)])
        return base.Update(train_op=train_op, post_init_ops=[],
                           hooks=[session_hooks.RunAtStart(init)])

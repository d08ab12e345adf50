"""The VariableManager interface: where variables live and how tower gradients meet.

Contract (tested for every manager): gradients are averaged over towers, so N towers with
batch b per tower make the same update as one tower with batch N*b.
"""
import abc
import collections

import tensorflow.compat.v1 as tf

Update = collections.namedtuple('Update', [
    'train_op',       # applies one step's update and increments global_step
    'post_init_ops',  # run once after variable initialisation or restore (copy tower 0 -> others)
    'hooks',          # SessionRunHooks every worker must install
    # None, or the global step the step makes once applied, where train_op ends before the
    # global step moves (priority pushes; the pipelined transfer, whose chief moves it once
    # every variable is applied): what a read of the global step after train_op stands for.
    'step_made',
], defaults=(None,))


def map_values(grad, fn):
    """fn applied to a gradient's values: a dense tensor, an IndexedSlices' values (kept
    sparse), or each tensor of a compressed payload that cannot be summed (a tuple,
    `tfhp.replication.transfer`); None stays None. Ops are made in the caller's device and
    control scopes."""
    if grad is None:
        return None
    if isinstance(grad, tuple):
        return tuple(fn(t) for t in grad)
    if isinstance(grad, tf.IndexedSlices):
        return tf.IndexedSlices(fn(grad.values), grad.indices, grad.dense_shape)
    return fn(grad)


def after(ops, grads_and_vars, device):
    """grads_and_vars whose gradients are ready only once `ops` ran (identities on `device`);
    as they are without ops."""
    if not ops:
        return grads_and_vars
    with tf.device(device), tf.control_dependencies(ops):
        return [(map_values(g, tf.identity), v) for g, v in grads_and_vars]


def mean_gradient(grads):
    """Mean of one variable's tower gradients: dense tensors, or IndexedSlices kept sparse."""
    if len(grads) == 1:
        return grads[0]
    if isinstance(grads[0], tf.IndexedSlices):
        return tf.IndexedSlices(tf.concat([g.values for g in grads], 0) / len(grads),
                                tf.concat([g.indices for g in grads], 0), grads[0].dense_shape)
    return tf.add_n(grads) / len(grads)


class VariableManager(abc.ABC):
    """Creates variables for each tower and turns per-tower gradients into one update."""

    @abc.abstractmethod
    def tower_scope(self, tower):
        """A context manager under which tower `tower` builds its model.

        It sets the device (or a device function placing variables) and the variable scope
        (shared or per-tower copies).
        """

    @abc.abstractmethod
    def trainable_variables(self, tower):
        """The trainable variables tower `tower` reads, in a fixed order."""

    @abc.abstractmethod
    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        """Aggregates and applies gradients.

        Args:
          tower_grads: tower_grads[t][v] = (gradient, variable) for tower t.
          optimizer_fn: a no-argument callable returning a new tf.train.Optimizer.
          global_step: the global step variable; the manager increments it once per step.
        Returns:
          An `Update`.
        """

    def post_init_ops(self):
        """Ops to run once after the variables are initialised or restored.

        E.g. copy tower 0's values to the other towers' copies, or prime staged reads. An
        `Update` returned by `apply_gradients` includes them in its `post_init_ops`; an
        evaluation graph, which has no Update, runs these.
        """
        return []

    def shared_gradients(self, tower_grads):
        """tower_grads keyed by the shared variables, and the ops an update must wait for.

        For a manager whose towers read the variables through something else (staged reads:
        `tfhp.replication.staged_vars`), an update built over its placement by another manager
        (`SyncReplicas`, `AsyncReplicas`) sends each gradient to the variable the read stands
        for, and only once these ops (the refills of the reads) have read the variables.

        Args:
          tower_grads: tower_grads[t][v] = (gradient, what tower t read for variable v).
        Returns:
          (tower_grads with each read replaced by its variable, [ops]); by default tower_grads
          as it is and no ops.
        """
        return tower_grads, []

    def savable_variables(self):
        """Variables a checkpoint holds, by their canonical (tower-independent) names.

        None means every global variable under its own name.
        """
        return None

    def counters(self):
        """Named tensors of counts the run reports (e.g. dropped gradients); {} when none.

        Scalars, or vectors (a histogram); `tfhp.counts.values` turns their values into Python.
        """
        return {}


class PlacementDelegate(VariableManager):
    """A manager that takes another manager's placement and replaces only the update.

    Args:
      placement: the VariableManager whose tower scopes, variables and checkpoint names are used.
    """

    def __init__(self, placement):
        self._placement = placement

    def tower_scope(self, tower):
        return self._placement.tower_scope(tower)

    def trainable_variables(self, tower):
        return self._placement.trainable_variables(tower)

    def shared_gradients(self, tower_grads):
        return self._placement.shared_gradients(tower_grads)

    def post_init_ops(self):
        return self._placement.post_init_ops()

    def savable_variables(self):
        return self._placement.savable_variables()

"""Distributed replicated: a copy of every variable per worker device, masters on the ps tasks.

Towers compute with local copies (no ps read per tower per step); each worker means its towers'
gradients on its CPU and sends that mean to the masters; then every copy is refreshed from the
masters. Synchronous (`sync` given): the mean goes through the `SyncReplicas` protocol, whose
wait for the step token is the cross-replica barrier before the refresh; asynchronous: each
worker applies its mean to the masters and refreshes at once. The masters carry the canonical
names, so checkpoints are interchangeable with `parameter_server`'s.

Chunked transfers (`sync.transfer`'s row is chunked, `tfhp.replication.transfers`): variables
over its chunk_bytes are cut into equal chunks (`partitioning.chunk_rows`; each chunk a master
of its own, spread over the ps tasks), the sync protocol releases each master on its own and
each copy is refreshed as soon as its master is: pulls overlap the pushes still on the wire.
Checkpoints keep the canonical names (a chunked master is saved as slices of one variable).

Background pulls (a transfer whose row has background_pulls): the step ends once the chief has
applied it, not after the last pull; the pulls run in a thread of their own, and each copy's
reads in the next step wait for its own pull only (`tfhp.replication.background_pulls`).

Compressed downlink deltas (`downlink`, synchronous only): the copies are moved by the
compressed deltas the chief publishes after each apply (`tfhp.replication.downlink`), not
copied from the masters, so only payloads come down; they start from the published values, and
the first pull of each session copies the published values again (whatever step the fill
caught them at, they are then the step's own).

The copies are first filled by the op 'fill_tower_copies', which the manager's hook runs when a
session is created; it also sets this worker's flag `tower_copies_filled`
(`tfhp.replication.init_flag`), so a worker without the hook fails at its first update, naming
that op, instead of applying gradients computed on zeros.
"""
import tensorflow.compat.v1 as tf

from tfhp import modes
from tfhp.ops import scopes
from tfhp.ops import session_hooks
from tfhp.replication import background_pulls as background_pulls_lib
from tfhp.replication import base
from tfhp.replication import device_setters
from tfhp.replication import init_flag
from tfhp.replication import master_copies
from tfhp.replication import partitioning
from tfhp.replication import transfer


class DistributedReplicated(base.VariableManager):
    """Local copies per tower, masters greedy-by-bytes over the ps tasks.

    Args:
      tower_devices: this worker's tower devices.
      variable_devices: the ps tasks' devices (masters).
      worker_device: this worker's CPU.
      sync: a `SyncReplicas` (placement None) for synchronous steps, whose transfer also
        says how the copies are pulled (module doc); None: asynchronous.
      compressor: the `tfhp.compression` scheme its gradients cross the network in (None:
        as they are).
      downlink: a `tfhp.replication.downlink.Downlink`: the copies follow compressed deltas
        (needs `sync`, with every replica in each step); None: they copy the masters.
    """

    def __init__(self, tower_devices, variable_devices, worker_device, sync=None,
                 compressor=None, downlink=None):
        if downlink is not None and sync is None:
            raise ValueError('compressed downlink deltas need synchronous steps: every worker '
                             'must apply every delta')
        row = sync.transfer.row if sync else None
        problem = row and modes.check_transfer(row, None, downlink=downlink is not None)
        if problem:
            raise ValueError(problem)
        self._placer = device_setters.GreedyByBytes(variable_devices)
        self._pipelined = bool(row and row.chunked)
        self._copies = master_copies.MasterCopies(
            tower_devices, device_setters.variables_on(self._placer, worker_device),
            slicing=partitioning.chunks_of(sync.transfer.chunk_bytes)
            if self._pipelined else None)
        self._worker_device = worker_device
        self._sync = sync
        self._compressor = compressor
        self._downlink = downlink
        self._ready = (background_pulls_lib.ReadyQueues(worker_device, len(tower_devices))
                       if row and row.background_pulls else None)

    @property
    def placer(self):
        """The `GreedyByBytes` placer of the masters."""
        return self._placer

    def tower_scope(self, tower):
        return self._copies.tower_scope(tower)

    def trainable_variables(self, tower):
        return self._copies.trainable_variables(tower)

    def counters(self):
        """{name: tensor} of this worker's counts (the sync protocol's dropped gradients)."""
        return self._sync.counters() if self._sync else {}

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        filled = init_flag.InitFlag(
            self._worker_device, 'tower_copies_filled', 'fill_tower_copies',
            'the tower copies of this worker were never filled from the masters: run the op '
            '`%s` once per session (the hook in Update.hooks does: install it)', local=True)
        # Background pulls: every read of a copy built so far (the towers') waits for its pull.
        tag = self._gate_reads(len(tower_grads)) if self._ready else None
        means = transfer.mean_over_towers(tower_grads, self._worker_device,
                                                self._compressor)
        master_grads = filled.gated([(g, self._copies.master_of(v)) for g, v in means])
        # Deltas start from what the workers were sent, not from the masters.
        published = self._published_value if self._downlink else None
        fill = filled.init_op([self._copies.refresh(self._worker_device, read=published)])
        hooks = [session_hooks.RunAtStart(fill)]
        if self._downlink:
            with tf.device(self._worker_device):
                self._synced = tf.Variable(False, trainable=False, name='downlink_synced',
                                           collections=[tf.GraphKeys.LOCAL_VARIABLES])
            hooks.append(session_hooks.RunAtStart(self._synced.assign(False)))
        if self._ready:
            hooks.append(session_hooks.RunAtStart(self._ready.seed(global_step.read_value())))
        if self._sync:
            update = self._sync.apply_worker_gradients(
                master_grads, optimizer_fn, global_step,
                # Pipelined: each copy pulled once its own master is new.
                after_each=self._pull_one if self._pipelined else None,
                publish=self._downlink.publish if self._downlink else None,
                tag=tag)
            if self._pipelined:
                return update._replace(train_op=self._synced_after(update.train_op),
                                       hooks=list(update.hooks) + hooks)
            step_op, hooks = update.train_op, list(update.hooks) + hooks
        else:
            with tf.name_scope(scopes.APPLY):
                step_op = optimizer_fn().apply_gradients(
                    [(transfer.widen(g, v, self._compressor), v) for g, v in master_grads],
                    global_step=global_step)
        with tf.name_scope(scopes.APPLY), tf.control_dependencies([step_op]):
            # A master without a gradient never changes: its copy keeps its fill.
            train_op = self._pull([v for g, v in master_grads if g is not None])
        return base.Update(train_op=self._synced_after(train_op), post_init_ops=[],
                           hooks=hooks)

    def _synced_after(self, train_op):
        """train_op, then (compressed deltas) the copies marked as following the deltas."""
        if not self._downlink:
            return train_op
        with tf.control_dependencies([train_op]):
            return self._synced.assign(True, read_value=False)

    def _gate_reads(self, num_towers):
        """The copies' reads gated on their ready queues; returns the step they hold."""
        return self._ready.gate([(t, copy, self._copies.master_of(copy))
                                 for t in range(num_towers)
                                 for copy in self._copies.trainable_variables(t)])

    def _pull(self, masters, after=None):
        """The op bringing the copies of `masters` up to date after a step; `after` (a
        token on the masters' ps task, or None) is what the reads wait for.

        Only the reads, on the ps, wait for it: a control edge from the ps into an op of the
        worker is a transfer of its own, one more per chunk beside the value pulled. With
        compressed deltas the whole pull waits (its reads are built in a cond's branches)."""
        if not self._downlink:
            return self._copies.refresh(self._worker_device, masters,
                                        read=lambda master: _read_after(master, after))
        # The session's first pull copies the published values: the fill may have read them a
        # delta before the step its global step names (a worker starting while the chief was
        # between an apply and its publish), and adding deltas would keep that gap. Once the
        # token is here they hold this step's delta, and the next needs this worker's gradient.
        with tf.control_dependencies([after] if after is not None else []):
            return tf.cond(
                self._synced.read_value(),
                lambda: self._copies.add_deltas(
                    self._worker_device, masters,
                    lambda master: self._downlink.delta(master, self._worker_device)),
                lambda: self._copies.refresh(self._worker_device, masters,
                                             read=self._published_value),
                name='pull_deltas_or_resync')

    def _published_value(self, master):
        """What the workers' copies of `master` hold (compressed deltas)."""
        return self._downlink.published(master).read_value()

    def _pull_one(self, master, step):
        """master's copies brought up to date; with background pulls, then released at
        `step` to the reads of the next step."""
        pull = self._pull([master], after=step)
        if not self._ready:
            return pull
        with tf.control_dependencies([pull]):
            return self._ready.release(master, step)


def _read_after(master, after):
    """master's value, read once `after` (None: at once) has run."""
    with tf.control_dependencies([after] if after is not None else []):
        return master.read_value()


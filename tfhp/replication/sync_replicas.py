"""Between-graph synchronous steps through gradient accumulators, with spare replicas.

The protocol (one step at global step g). Replica = every worker, the chief included; L = the
global step at which the replica's variables were read (its local step):
  1. The replica computes its towers' gradients and means them on its own CPU (one send per
     variable).
  2. Once they are ready it reads the global step: if it is already past L, the gradient is late
     and is counted in `dropped_gradients` (step 3 will drop it). Only with spares: without,
     the step cannot move before this gradient is in, so none is late and nothing is read.
  3. It applies the mean to each variable's ConditionalAccumulator (on the variable's ps task),
     tagged L; an accumulator drops gradients tagged below its own step.
  4. It waits for a step token newer than L (older tokens are discarded), then sets L to the
     global step of that moment and the step ends.
The chief, in a thread, forever:
  a. takes from every accumulator the mean of the (at least replicas_to_aggregate) gradients
     tagged with the current step, blocking until they are in; this advances the accumulator;
  b. applies them with the optimizer, incrementing the global step to g+1 (this is the only
     global_step increment);
  c. enqueues num_replicas tokens holding g+1, one per replica.
At session start every replica sets L to the global step (which may come from a checkpoint) and
the chief sets the accumulators' step to it; a replica's first step needs no token.

Spares: with replicas_to_aggregate < num_replicas a step is applied as soon as the first R fresh
gradients are in; a late replica's gradient is dropped and counted, and as a token newer than its
L is already waiting, it starts on the new variables at once. Without spares (R = num_replicas)
every step waits for every replica, as a synchronous step must.

Transfers (`tfhp.replication.transfers`, one a row of `tfhp.modes.TRANSFERS`): steps 3 and 4 are
the transfer's. Chunked, each variable has its own token queue (on its ps task): the chief
applies each variable as soon as its accumulator holds its gradients (an optimizer per
variable, so one variable's apply waits for no other's) and enqueues that variable's tokens at
once; the global step is incremented once every variable is applied. With background pulls
the chief also enqueues a token of each new global step, which ends the worker's step.

Staged reads (`--staged_vars`, a `ParameterServer(staged_vars=True)` placement): each worker's
towers compute on the weights its staging areas (on its own devices: a worker-side copy of the
ps variables) got one step earlier, and the step's refill of every area reads the ps variable
before step 3 sends the gradient (a control dependency). The step's token of step 4 came after
the chief's apply of the step before, and (without spares) the apply of this step waits for
this gradient, so a refill reads the weights of exactly L: a step computes on the weights of
L - 1 (the primed ones at the first step) and its gradient is tagged L, so it is fresh and
never dropped for the staleness the staging itself makes. Every worker reads the same weights,
so the job makes the one-process staged recurrence w_{L+1} = w_L - lr mean g(w_{L-1})
(tests/cluster/staged_vars_test.py). With spares a step may be applied before a late replica's
refill reads, which then reads the newer weights: at most one step stale, never more.

Why not tf.train.SyncReplicasOptimizer: its replicas use the oldest token's value as L, and the
tokens a straggler leaves unused stay fresh, so fast replicas send second gradients for a step in
the straggler's place. Measured (3 workers, 1 ps, loopback, one worker delayed 200 ms per step,
R = 3): the global step ran at 28 steps/s, as if there were no straggler, i.e. steps were not
synchronous; with spares, fast replicas burn steps on stale leftover tokens. Here a replica sends
at most one gradient per step, and dropped gradients are counted.
"""
import time

import tensorflow.compat.v1 as tf

from tfhp.ops import barriers
from tfhp.ops import scopes
from tfhp.ops import session_hooks
from tfhp import modes
from tfhp.replication import base
from tfhp.replication import transfer
from tfhp.replication import transfers

TOKEN_QUEUE = 'tfhp_sync_step_tokens'


class _SyncHook(session_hooks.RunInLoops):
    """Session start-up of the protocol; then each of `loops` (the chief's update loop a-c,
    background pulls' step 4, priority pushes' senders) run over and over in a thread of its
    own; `drained` (background pulls: the last step's pulls) waited for by `settle` and at the
    end."""

    def __init__(self, init_op, loops=(), drained=None, timeout_s=None):
        super().__init__(loops)
        self._init_op = init_op
        self._drained = drained
        self._timeout_s = timeout_s

    def after_create_session(self, session, coord):
        session.run(self._init_op)
        self.start_loops(session, coord)

    def settle(self, session):
        """Waits, bounded, for `drained` (the last step's pulls; its apply too, where the
        step ends before it)."""
        if self._drained is None:
            return
        deadline = time.monotonic() + self._timeout_s
        while not session.run(self._drained):
            if time.monotonic() > deadline:
                raise RuntimeError(
                    'the pulls of the last step did not come back within --step_timeout_s=%g s'
                    ' (background pulls: the chief releases each variable once every worker '
                    'sent its gradient)' % self._timeout_s)
            time.sleep(0.01)

    def end(self, session):
        self.settle(session)


def _accumulator(grad, var):
    """The accumulator of `var`, on var's ps task, shared by every worker by name."""
    name = var.op.name + '/grad_accum'
    with tf.device(var.device):
        # The variable's dtype: a gradient sent narrow is widened before it is applied.
        dtype = var.dtype.base_dtype
        if isinstance(grad, tf.IndexedSlices):
            return tf.SparseConditionalAccumulator(dtype, shape=(), shared_name=name)
        return tf.ConditionalAccumulator(dtype, shape=var.shape, shared_name=name)


def _apply(accumulator, grad, var, local_step, compressor):
    grad = transfer.widen(grad, var, compressor)  # sent compressed: back to the accumulator's
    if isinstance(grad, tf.IndexedSlices):
        return accumulator.apply_indexed_slices_grad(grad, local_step=local_step)
    return accumulator.apply_grad(grad, local_step=local_step)


def _take(accumulator, grad, num_required):
    if isinstance(grad, tf.IndexedSlices):
        return accumulator.take_indexed_slices_grad(num_required)
    return accumulator.take_grad(num_required)


def _published(update, variables, publish):
    """`update`, followed by publish(v) for each of `variables` when publish is given."""
    if publish is None:
        return update
    with tf.control_dependencies([update]):
        return tf.group(*[publish(v) for v in variables])


class SyncReplicas(base.PlacementDelegate):
    """Synchronous steps over the workers of a between-graph job, with spare replicas.

    Args:
      placement: the manager that places variables (tower_scope, trainable_variables), e.g.
        `ParameterServer(topology.tower_devices, topology.variable_devices)`; None when the
        caller only uses `apply_worker_gradients` (`DistributedReplicated`).
      worker_device: this worker's CPU (its gradient mean, local step and counters).
      replicas_to_aggregate: gradients that make one step (R).
      num_replicas: workers taking part (R plus spares).
      is_chief: whether this worker runs the update loop.
      compressor: the `tfhp.compression` scheme its gradients cross the network in (None:
        as they are).
      transfer: steps 3-4, a `tfhp.replication.transfers` object (`transfers.make`); None:
        the whole step.
      timeout_s: with background pulls, the bound on waiting for the last step's pulls as
        the session ends (--step_timeout_s).
    """

    def __init__(self, placement, worker_device, replicas_to_aggregate, num_replicas,
                 is_chief, compressor=None, transfer=None, timeout_s=600.0):
        if not 1 <= replicas_to_aggregate <= num_replicas:
            raise ValueError('replicas_to_aggregate=%d must be in 1..num_replicas=%d'
                             % (replicas_to_aggregate, num_replicas))
        self.transfer = transfer or transfers.make(modes.WHOLE_STEP)
        problem = modes.check_transfer(self.transfer.row, None,
                                       spares=replicas_to_aggregate < num_replicas)
        if problem:
            raise ValueError(problem)
        super().__init__(placement)
        self._worker_device = worker_device
        self._replicas_to_aggregate = replicas_to_aggregate
        self._num_replicas = num_replicas
        self._is_chief = is_chief
        self._compressor = compressor
        self._timeout_s = timeout_s
        self._dropped = None

    def counters(self):
        """{name: tensor} of this worker's counts, read for the run's result.

        Call after `apply_gradients` (which builds the counters).
        """
        return {'dropped_gradients': self._dropped.read_value()}

    def apply_gradients(self, tower_grads, optimizer_fn, global_step):
        # Staged reads (the placement's): sent to their variables once this step's refills
        # have read them (see the module doc).
        tower_grads, reads = self.shared_gradients(tower_grads)
        means = transfer.mean_over_towers(tower_grads, self._worker_device, self._compressor)
        update = self.apply_worker_gradients(base.after(reads, means, self._worker_device),
                                             optimizer_fn, global_step)
        return update._replace(post_init_ops=self.post_init_ops())  # e.g. priming the reads

    def apply_worker_gradients(self, grads_and_vars, optimizer_fn, global_step,
                               after_each=None, publish=None, tag=None):
        """The protocol of the module docstring for this worker's gradient per variable.

        Args:
          grads_and_vars: [(this worker's gradient, shared variable)]; a gradient sent compressed
            (`transfer.narrow`) is decompressed on the variable's device.
          optimizer_fn: no-argument callable returning the optimizer the chief applies with.
          global_step: the global step variable (on a ps task).
          after_each: after_each(variable, step) -> an op to run once that variable of this
            step is applied (e.g. its refresh), `step` being the token that released it (the
            whole step's token unless the transfer is chunked), on the token queue's ps task;
            what it reads there must wait for `step` (control dependencies where the read
            runs: an op on the worker waiting for one on the ps costs a transfer of its own).
            The step ends after all of them.
          publish: publish(variable) -> an op the chief runs once it has applied a step to
            that variable and before it releases the variable's tokens (compressed downlink
            deltas, `tfhp.replication.downlink`); built under control dependencies on the
            apply. None: nothing.
          tag: with a transfer of background pulls (`tfhp.replication.background_pulls`),
            the step the gradients were computed at, which the caller's reads hold; else None.
        Returns:
          A `base.Update` whose hooks every worker must install.
        """
        row = self.transfer.row
        if row.background_pulls != (tag is not None):
            raise ValueError('ps transfer %s: a tag (the step the reads hold) is given with '
                             'background pulls, and only then' % row.name)
        grads_and_vars = [(g, v) for g, v in grads_and_vars if g is not None]
        step_device = global_step.device
        with tf.device(self._worker_device):
            local_step = tf.Variable(tf.constant(0, tf.int64), trainable=False,
                                     collections=[tf.GraphKeys.LOCAL_VARIABLES],
                                     name='sync_local_step')
            self._dropped = tf.Variable(tf.constant(0, tf.int64), trainable=False,
                                        collections=[tf.GraphKeys.LOCAL_VARIABLES],
                                        name='dropped_gradients')
        accumulators = [_accumulator(g, v) for g, v in grads_and_vars]
        if row.chunked:
            tokens = [barriers.step_token_queue(v.device, '%s/%s' % (TOKEN_QUEUE, v.op.name))
                      for _, v in grads_and_vars]
        else:
            tokens = barriers.step_token_queue(step_device, TOKEN_QUEUE)
        step_tokens = (barriers.step_token_queue(step_device, TOKEN_QUEUE)
                       if getattr(self.transfer, 'ends_at_apply', False) else None)

        def push(i, step, gates, hold, payload=None):
            """Step 3 for gradient i (or its buffered `payload`): its apply, tagged `step`,
            after `gates`, which (hold) also hold the gradient on this worker: the ps
            receives a tensor as soon as the worker makes it, whatever waits for it there."""
            grad, var = grads_and_vars[i]
            if payload is None and hold:
                with tf.device(self._worker_device), tf.control_dependencies(gates):
                    grad = base.map_values(grad, tf.identity)
            with tf.device(var.device), tf.control_dependencies(gates):
                return _apply(accumulators[i], grad if payload is None else payload, var,
                              step, self._compressor)

        with tf.name_scope(scopes.AGGREGATE):
            step_read = tag if tag is not None else local_step.read_value()
            # 2. Late? Only with spares: without, the step cannot move before this gradient
            # is in, and the pushes need not wait for a read of the global step, on a ps
            # task that, on shared cores, answers when it gets one.
            count = self._count_late(grads_and_vars, step_read, global_step)
            # 3-4. Send, tagged with the local step, after the count; wait for the step.
            built = self.transfer.build(transfers.Step(
                grads_and_vars, push, tokens, step_read, count, after_each, local_step,
                global_step, self._worker_device, step_tokens))

        init_ops = built.init_ops + [local_step.assign(global_step.read_value(),
                                                       read_value=False)]
        loops = list(built.loops)
        if self._is_chief:
            init_ops += [a.set_global_step(global_step.read_value()) for a in accumulators]
            loops.append(self._chief_update(accumulators, grads_and_vars, optimizer_fn,
                                            global_step, tokens, publish, step_tokens))
        hook = _SyncHook(tf.group(*init_ops, name='sync_replicas_init'), loops, built.drained,
                         self._timeout_s)
        return base.Update(train_op=built.train_op, post_init_ops=[], hooks=[hook],
                           step_made=built.step_made)

    def _count_late(self, grads_and_vars, step_read, global_step):
        """With spares, the op counting this worker's gradient in dropped_gradients if the
        global step is already past step_read (read once the gradients are ready); None
        without spares, where none can be late."""
        if self._replicas_to_aggregate == self._num_replicas:
            return None
        # A payload that cannot be summed is a tuple of tensors: wait for each.
        with tf.control_dependencies(tf.nest.flatten([g for g, _ in grads_and_vars])):
            late = tf.less(step_read, global_step.read_value())
        return self._dropped.assign_add(tf.cast(late, tf.int64), read_value=False)

    def _chief_update(self, accumulators, grads_and_vars, optimizer_fn, global_step, tokens,
                      publish, stepped_tokens=None):
        """Steps a-c of the protocol, as one op the chief's thread runs in a loop; publish
        (or None) as in `apply_worker_gradients`, between b and c; stepped_tokens (background
        pulls): a queue taking num_replicas tokens of each new global step."""
        if self.transfer.row.chunked:
            return self._chief_update_per_variable(accumulators, grads_and_vars, optimizer_fn,
                                                   global_step, tokens, publish, stepped_tokens)
        with tf.name_scope(scopes.APPLY):
            means = []
            for accumulator, (grad, var) in zip(accumulators, grads_and_vars):
                with tf.device(var.device):
                    means.append((_take(accumulator, grad, self._replicas_to_aggregate), var))
            update = optimizer_fn().apply_gradients(means, global_step=global_step)
            update = _published(update, [v for _, v in means], publish)
            with tf.device(global_step.device), tf.control_dependencies([update]):
                return tokens.enqueue_many(
                    tf.fill([self._num_replicas], global_step.read_value()))

    def _chief_update_per_variable(self, accumulators, grads_and_vars, optimizer_fn,
                                   global_step, tokens, publish, stepped_tokens):
        """Steps a-c, each variable on its own: take, apply (its own optimizer, so its slots
        and step counts are its own, as one optimizer's would be), release its tokens; the
        global step moves once every variable is applied."""
        with tf.name_scope(scopes.APPLY):
            step = global_step.read_value()
            released = []
            for accumulator, queue, (grad, var) in zip(accumulators, tokens, grads_and_vars):
                with tf.device(var.device):
                    mean = _take(accumulator, grad, self._replicas_to_aggregate)
                    update = _published(optimizer_fn().apply_gradients([(mean, var)]), [var],
                                        publish)
                    with tf.control_dependencies([update]):
                        released.append(queue.enqueue_many(
                            tf.fill([self._num_replicas], step + 1)))
            with tf.device(global_step.device), tf.control_dependencies(released):
                stepped = global_step.assign_add(1, read_value=False)
                if stepped_tokens is None:
                    return stepped
                with tf.control_dependencies([stepped]):
                    return stepped_tokens.enqueue_many(tf.fill([self._num_replicas], step + 1))

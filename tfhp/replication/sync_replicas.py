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

Pipelined (`per_variable`): each variable has its own token queue (on its ps task). The chief
applies each variable as soon as its accumulator holds its gradients (an optimizer per
variable, so one variable's apply waits for no other's) and enqueues that variable's tokens at
once; the global step is incremented once every variable is applied. A replica sends its
gradients in turn (one at a time, or a window of bytes at once), last variable first (the order
backprop makes them; sent all at once they would share the link and all arrive at the end),
waits for each variable's token
apart, and `apply_worker_gradients(after_each=...)` runs what depends on one variable (its
refresh) as soon as that variable's token is there: the pulls of variables already applied
overlap the pushes still on the wire, both directions of each link busy at once.

Pull-clocked (`pull_clock`): what lets a push leave. By default it is the ps's receipt of the
push before, news that comes back on the connection the pulls come down, behind them: the
more workers share a ps port, the longer the pulls queued to each and the longer its pushes
wait. Pull-clocked, a push leaves once the pull PULL_LAG pushes back in its chain is in,
an event on the worker itself: in a steady state each chunk's push then starts as the pull
of the one before it ends, one push and one pull per chain on the wire. The first PULL_LAG
pushes of a chain still wait for receipts, when nothing is pulled yet.

Priority pushes (`priority`, with background pulls): the gradients leave in forward order
among those made, from sender threads of the worker (`tfhp.replication.priority_pushes`), and
the step ends once they are queued, before the chief applies it; the next step's reads still
wait for their own variables' pulls of it, and `Update.step_made` stands for the global step it
makes.

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
from tfhp.replication import base
from tfhp.replication import priority_pushes
from tfhp.replication import transfer

TOKEN_QUEUE = 'tfhp_sync_step_tokens'
# Pull-clocked: a push waits for the pull this many pushes back in its chain (module doc).
# Measured equal with 3 (null_dense, 6 workers on 1 ps at 1 Gbit/s: 952 and 960 ms).
PULL_LAG = 2


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


def _num_bytes(var):
    return var.shape.num_elements() * var.dtype.base_dtype.size


def _window_gate(sent, size, window_bytes):
    """The apply a push of `size` bytes waits for: the latest of `sent` ([(apply, bytes)] to
    the same ps task, in order) whose bytes, with those sent after it and this push's, would
    exceed window_bytes; None when every push sent fits (0: the last one, one at a time).
    Bytes are the variables' (a compressed gradient counts as its variable's)."""
    in_flight = size
    for apply, num_bytes in reversed(sent):
        in_flight += num_bytes
        if in_flight > window_bytes:
            return apply
    return None


def _published(update, variables, publish):
    """`update`, followed by publish(v) for each of `variables` when publish is given."""
    if publish is None:
        return update
    with tf.control_dependencies([update]):
        return tf.group(*[publish(v) for v in variables])


def _await_one(apply, queue, var, step_read, after_each):
    """Pipelined step 4 for one variable: (its token newer than step_read, taken once `apply`
    ran (None: at once), then after_each(var, token) or the token itself)."""
    with tf.control_dependencies([apply] if apply is not None else []):
        received = barriers.dequeue_newer_than(queue, step_read)
    return received, after_each(var, received) if after_each else received


def _await_each(applies, tokens, grads_and_vars, step_read, after_each):
    """Pipelined step 4: `_await_one` for each variable (applies None: the background pulls'
    loop); returns (the ops after each, the tokens' step).

    The new local step is the tokens' step, not the global step's: the chief moves the global
    step only after the last variable's tokens are out, so a read of it here could still see
    the old step (and tag the next gradients stale)."""
    waits = [_await_one(applies[i] if applies else None, queue, var, step_read, after_each)
             for i, (queue, (_, var)) in enumerate(zip(tokens, grads_and_vars))]
    return [done for _, done in waits], _tokens_step([received for received, _ in waits])


def _tokens_step(received):
    """The newest of the tokens `received`, each first reduced on its own ps task: one
    transfer per task, not one per variable beside its pull."""
    by_device = {}
    for token in received:
        by_device.setdefault(token.device, []).append(token)
    newest = []
    for device, tokens in by_device.items():
        with tf.device(device):
            newest.append(tf.reduce_max(tf.stack(tokens)))
    return tf.reduce_max(tf.stack(newest))


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
      per_variable: a token queue per variable, each variable applied and released on its own
        (pipelined; see the module doc); False: one step token for every variable.
      timeout_s: with background pulls, the bound on waiting for the last step's pulls as
        the session ends (--step_timeout_s).
      window_bytes: per_variable: bytes of gradients each ps task may have on the way at once
        (`_window_gate`); 0: one push at a time.
      priority: with background pulls, the gradients leave in forward order among those made
        (`tfhp.replication.priority_pushes`, window_bytes on the way to each ps task);
        False: the static chain of `_send`.
      fusion_bytes: with priority, consecutive gradients of a ps task each under this many
        bytes are pushed together in groups of at most this many (`priority_pushes.build`).
      pull_clock: per_variable, without background pulls or a window: each push waits for
        the pull PULL_LAG pushes back in its chain instead of the receipt of the one before
        (module doc).
    """

    def __init__(self, placement, worker_device, replicas_to_aggregate, num_replicas,
                 is_chief, compressor=None, per_variable=False, timeout_s=600.0,
                 window_bytes=0, priority=False, pull_clock=False, fusion_bytes=0):
        if not 1 <= replicas_to_aggregate <= num_replicas:
            raise ValueError('replicas_to_aggregate=%d must be in 1..num_replicas=%d'
                             % (replicas_to_aggregate, num_replicas))
        if pull_clock and not (per_variable and not window_bytes and not priority):
            raise ValueError('pull_clock paces the chain of the pipelined transfer one push at '
                             'a time: it needs per_variable, no window_bytes and no priority')
        super().__init__(placement)
        self._worker_device = worker_device
        self._replicas_to_aggregate = replicas_to_aggregate
        self._num_replicas = num_replicas
        self._is_chief = is_chief
        self._compressor = compressor
        self._per_variable = per_variable
        self._timeout_s = timeout_s
        self._window_bytes = window_bytes
        self._priority = priority
        self._fusion_bytes = fusion_bytes
        self._pull_clock = pull_clock
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
            whole step's token without per_variable), on the token queue's ps task; what it
            reads there must wait for `step` (control dependencies where the read runs: an
            op on the worker waiting for one on the ps costs a transfer of its own). The step
            ends after all of them.
          publish: publish(variable) -> an op the chief runs once it has applied a step to
            that variable and before it releases the variable's tokens (compressed downlink
            deltas, `tfhp.replication.downlink`); built under control dependencies on the
            apply. None: nothing.
          tag: background pulls (`tfhp.replication.background_pulls`; per_variable, no
            spares): the step the gradients were computed at. The step then ends once the
            chief has applied it (`_background`); step 4 (each token, then after_each) runs
            as a loop in a thread of this worker's, and the session's end waits for the last
            step's pulls. None: the step ends with step 4.
        Returns:
          A `base.Update` whose hooks every worker must install.
        """
        background = tag is not None
        if background and not (self._per_variable and
                               self._replicas_to_aggregate == self._num_replicas):
            raise ValueError('background pulls need a token per variable and every replica in '
                             'each step (no spares)')
        if self._priority and not background:
            raise ValueError('priority pushes need background pulls (a tag): a step that ends '
                             'with its pulls has its pushes in its own run')
        if self._pull_clock and background:
            raise ValueError('a pull-clocked push waits for a pull of its own step: background '
                             'pulls run beside the step')
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
        if self._per_variable:
            tokens = [barriers.step_token_queue(v.device, '%s/%s' % (TOKEN_QUEUE, v.op.name))
                      for _, v in grads_and_vars]
        else:
            tokens = barriers.step_token_queue(step_device, TOKEN_QUEUE)

        loops, drained, init_ops, step_made = [], None, [], None
        with tf.name_scope(scopes.AGGREGATE):
            step_read = tag if background else local_step.read_value()
            # 2. Late? Only with spares: without, the step cannot move before this gradient
            # is in, and the pushes need not wait for a read of the global step, on a ps
            # task that, on shared cores, answers when it gets one.
            count = self._count_late(grads_and_vars, step_read, global_step)
            # 3. Send, tagged with the local step, after the count (spares only).
            if self._priority:
                applies, senders = self._send_by_priority(accumulators, grads_and_vars,
                                                          step_read)
                loops += senders
            elif self._pull_clock:
                applies, waits = self._send_pull_clocked(accumulators, grads_and_vars,
                                                         step_read, count, tokens, after_each)
            else:
                applies = self._send(accumulators, grads_and_vars, step_read, count)
            # 4. Wait for the step to be applied (or to have been applied without us): each
            # variable apart (pipelined), or all at once; or in the pulls' own loop.
            if background:
                # Priority pushes end the step before its apply: nobody waits for the tokens.
                stepped_tokens = (None if self._priority else
                                  barriers.step_token_queue(step_device, TOKEN_QUEUE))
                train_op, loop, drained, init = self._background(
                    applies, tokens, stepped_tokens, grads_and_vars, step_read, local_step,
                    global_step, after_each)  # no spares, so no count
                loops.append(loop)
                init_ops.append(init)
            else:
                if self._pull_clock:  # step 4 was built beside step 3
                    done = [d for _, d in waits]
                    new_step = _tokens_step([received for received, _ in waits])
                elif self._per_variable:
                    done, new_step = _await_each(applies, tokens, grads_and_vars, step_read,
                                                 after_each)
                else:
                    with tf.control_dependencies(applies):
                        token = barriers.dequeue_newer_than(tokens, step_read)
                    done = ([after_each(v, token) for _, v in grads_and_vars]
                            if after_each else [token])
                with tf.control_dependencies(done):
                    if not self._per_variable:  # read once the step's token is taken
                        new_step = global_step.read_value()
                    train_op = local_step.assign(new_step, read_value=False)
                if self._per_variable:
                    # The chief moves the global step once every variable is out: a read of
                    # it after this step may still see the step before, and a worker that
                    # went by it would take one step more than the others, alone, to its end.
                    step_made = new_step

        init_ops.append(local_step.assign(global_step.read_value(), read_value=False))
        if self._is_chief:
            init_ops += [a.set_global_step(global_step.read_value()) for a in accumulators]
            loops.append(self._chief_update(accumulators, grads_and_vars, optimizer_fn,
                                            global_step, tokens, publish,
                                            stepped_tokens if background else None))
        hook = _SyncHook(tf.group(*init_ops, name='sync_replicas_init'), loops, drained,
                         self._timeout_s)
        return base.Update(train_op=train_op, post_init_ops=[], hooks=[hook],
                           step_made=step_read + 1 if self._priority else step_made)

    def _background(self, sent, tokens, stepped_tokens, grads_and_vars, tag, local_step,
                    global_step, after_each):
        """Background pulls' steps 3-4: (the step's op, the pulls' loop op, whether the last
        step's pulls are in, an init op).

        The step ends once the global step has moved past `tag` (a token of the chief's), so a
        read after it sees the step this one made, as the whole step's does; with priority
        pushes (stepped_tokens None) once its gradients are queued for the senders, so the
        next forward pass starts on the first layers while the later ones are still pushed
        (the `Update`'s step_made stands for the global step it makes). The loop takes
        each variable's token newer than local_step (the step the copies hold), runs
        after_each, and moves local_step; the pulls are in once it passed the step last sent
        (and, with priority pushes, the step was applied).
        """
        with tf.device(self._worker_device):
            pushed = tf.Variable(tf.constant(0, tf.int64), trainable=False,
                                 collections=[tf.GraphKeys.LOCAL_VARIABLES],
                                 name='sync_pushed_step')
        if stepped_tokens is None:
            step_op = tf.group(*sent, pushed.assign(tag))
        else:
            with tf.control_dependencies(sent):
                stepped = barriers.dequeue_newer_than(stepped_tokens, tag)
            step_op = tf.group(stepped, pushed.assign(tag))
        done, new_step = _await_each(None, tokens, grads_and_vars, local_step.read_value(),
                                     after_each)
        with tf.control_dependencies(done):
            loop = local_step.assign(new_step, read_value=False, name='background_pulls')
        drained = tf.greater(local_step.read_value(), pushed.read_value())
        return step_op, loop, drained, pushed.assign(global_step.read_value() - 1)

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

    def _send(self, accumulators, grads_and_vars, step_read, gate):
        """Each gradient applied to its accumulator, tagged step_read, after `gate` (None:
        nothing); returns the apply ops in the order of grads_and_vars.

        All at once, or (pipelined) in turn to each ps task, last variable first (the order
        backprop makes them), so each arrives early enough for its pull to overlap the next
        pushes: sent all at once they would share the link and all arrive at the end. In turn
        means one at a time, or (window_bytes) as many as fit in that many bytes in flight:
        a push that waits for the ps's receipt of the one before leaves the link idle while
        the news comes back, and it comes back behind the pulls on the same connection.
        Each ps task has a chain of its own: one chain over every task left all but one ps NIC
        idle at any moment (null_dense, 2 workers, 2 ps, 1 Gbit/s: 1.94 times the duplex
        bound with one chain, 1.18-1.25 with a chain per task)."""
        applies = [None] * len(grads_and_vars)
        sent = {}  # ps device -> [(apply, bytes)] sent to it, in order
        first = [gate] if gate is not None else []
        order = range(len(grads_and_vars))
        for i in reversed(order) if self._per_variable else order:
            grad, var = grads_and_vars[i]
            size = _num_bytes(var)
            waited = _window_gate(sent.get(var.device, []), size, self._window_bytes)
            gates = [waited] if waited is not None else first
            applies[i] = self._push(accumulators[i], grad, var, step_read, gates,
                                    self._per_variable)
            if self._per_variable:
                sent.setdefault(var.device, []).append((applies[i], size))
        return applies

    def _push(self, accumulator, grad, var, step_read, gates, gate_sender):
        """The apply of `grad` to `accumulator` after `gates`, which (gate_sender) also hold the
        gradient on this worker: the ps receives a tensor as soon as the worker makes it,
        whatever waits for it on the ps."""
        if gate_sender:
            with tf.device(self._worker_device), tf.control_dependencies(gates):
                grad = base.map_values(grad, tf.identity)
        with tf.device(var.device), tf.control_dependencies(gates):
            return _apply(accumulator, grad, var, step_read, self._compressor)

    def _send_pull_clocked(self, accumulators, grads_and_vars, step_read, gate, tokens,
                           after_each):
        """`_send`'s chains, pull-clocked (module doc), each push's step 4 built beside it;
        returns (the apply ops, [(token, op after it)]), both in the order of grads_and_vars."""
        applies, waits = [None] * len(grads_and_vars), [None] * len(grads_and_vars)
        chains = {}  # ps device -> the indices sent to it, in order
        for i in reversed(range(len(grads_and_vars))):
            grad, var = grads_and_vars[i]
            chain = chains.setdefault(var.device, [])
            if not chain:
                gates = [gate] if gate is not None else []
            elif len(chain) < PULL_LAG:  # nothing pulled yet: the receipt of the one before
                gates = [applies[chain[-1]]]
            else:
                gates = [waits[chain[-PULL_LAG]][1]]
            applies[i] = self._push(accumulators[i], grad, var, step_read, gates, True)
            waits[i] = _await_one(applies[i], tokens[i], var, step_read, after_each)
            chain.append(i)
        return applies, waits

    def _send_by_priority(self, accumulators, grads_and_vars, tag):
        """Priority pushes: (ops queueing each gradient once made, the sender loops)."""
        def push(i, payload, step):
            var = grads_and_vars[i][1]
            with tf.device(var.device):
                return _apply(accumulators[i], payload, var, step, self._compressor)
        return priority_pushes.build(grads_and_vars, tag, self._worker_device, push,
                                     self._window_bytes, fusion_bytes=self._fusion_bytes)

    def _chief_update(self, accumulators, grads_and_vars, optimizer_fn, global_step, tokens,
                      publish, stepped_tokens=None):
        """Steps a-c of the protocol, as one op the chief's thread runs in a loop; publish
        (or None) as in `apply_worker_gradients`, between b and c; stepped_tokens (background
        pulls): a queue taking num_replicas tokens of each new global step."""
        if self._per_variable:
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

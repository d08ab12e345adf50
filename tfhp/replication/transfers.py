"""The ps transfers: steps 3 and 4 of `sync_replicas`' protocol, one class per row of
`tfhp.modes.TRANSFERS` (what each does and combines with is its row; `make` builds the one a
row names, with the sizes it takes). Each class has one method, `build(step)`: this worker's
pushes of a step's gradients and its wait for the step's variables, as a `Built`.

Whole step (tf_cnn_benchmarks'): every gradient pushed at once, then the step's one token.

Chunked transfers: each variable (or chunk, `DistributedReplicated` cuts them) has its own
token queue on its ps task and is applied and released on its own. A replica sends its
gradients in turn, a chain per ps task (one chain over every task left all but one ps NIC idle:
null_dense, 2 workers, 2 ps, 1 Gbit/s: 1.94 times the duplex bound, 1.18-1.25 with a chain per
task), last variable first (the order backprop makes them; sent all at once they would share
the link and all arrive at the end), and runs after_each (a copy's refresh) as soon as that
variable's token is there: the pulls of variables already applied overlap the pushes still on
the wire, both directions of each link busy at once.
  - pipelined: a push waits for the ps's receipt of the one before, or (a window of bytes) of
    the last one beyond the window (`_window_gate`).
  - pull_clocked: a push leaves once the pull PULL_LAG pushes back in its chain is in, an event
    on the worker itself, not a receipt that comes back behind the pulls on the same
    connection: in a steady state each push starts as the pull of the one before it ends. The
    first PULL_LAG pushes of a chain still wait for receipts, when nothing is pulled yet.
  - background: the step ends once the chief has applied it (a token of the global step's);
    the pulls run as a loop in a thread of the worker's, and each read of the next step waits
    for its own variable's pull (`tfhp.replication.background_pulls`).
  - priority: background pulls, and the gradients leave in forward order among those made,
    from sender threads (`tfhp.replication.priority_pushes`); the step ends once they are
    queued, before the chief applies it, and `Built.step_made` stands for the step it makes.
"""
import collections

import tensorflow.compat.v1 as tf

from tfhp import modes
from tfhp.ops import barriers
from tfhp.replication import priority_pushes

# Pull-clocked: a push waits for the pull this many pushes back in its chain (module doc).
# Measured equal with 3 (null_dense, 6 workers on 1 ps at 1 Gbit/s: 952 and 960 ms).
PULL_LAG = 2

Step = collections.namedtuple('Step', [
    'grads_and_vars',  # [(gradient, variable)], None gradients dropped
    'push',            # push(i, tag, gates, hold) -> the apply of gradient i, tagged, after
                       # gates; hold: the gradient itself waits for them on the worker
    'tokens',          # the step's token queue, or (chunked) one per variable
    'step_read',       # the step the gradients are tagged with (L)
    'gate',            # what the first pushes wait for (the late count), or None
    'after_each',      # after_each(variable, token) -> op, or None
    'local_step',      # the worker's L variable
    'global_step',
    'worker_device',
    'step_tokens',     # background pulls: the queue of global-step tokens, else None
])
Built = collections.namedtuple('Built', [
    'train_op',   # the worker's step
    'loops',      # ops or `session_hooks.Loop`s run over and over in threads of their own
    'drained',    # a bool tensor: the last step's pulls are in (None: the step waits for them)
    'init_ops',   # run at session start
    'step_made',  # the global step the step makes, where a read could still see the old one
])


class WholeStep:
    """Every gradient pushed at once; the step's one token releases every variable."""

    def __init__(self, row):
        self.row = row

    def build(self, step):
        first = [step.gate] if step.gate is not None else []
        applies = [step.push(i, step.step_read, first, False)
                   for i in range(len(step.grads_and_vars))]
        with tf.control_dependencies(applies):
            token = barriers.dequeue_newer_than(step.tokens, step.step_read)
        done = ([step.after_each(v, token) for _, v in step.grads_and_vars]
                if step.after_each else [token])
        with tf.control_dependencies(done):  # read once the step's token is taken
            train_op = step.local_step.assign(step.global_step.read_value(), read_value=False)
        return Built(train_op, [], None, [], None)


class Pipelined:
    """A chain per ps task, each push after the receipt of the one before (or a window).

    Args:
      row: its `tfhp.modes.Transfer`.
      chunk_bytes: the chunks' size (`DistributedReplicated` cuts the variables).
      window_bytes: bytes of gradients on the way to each ps task at once; 0: one at a time.
    """

    def __init__(self, row, chunk_bytes, window_bytes=0):
        self.row = row
        self.chunk_bytes = chunk_bytes
        self.window_bytes = window_bytes

    def build(self, step):
        return released(step, _chains(step, self.window_bytes))


class PullClocked(Pipelined):
    """The chain, each push paced by the pull PULL_LAG pushes back (module doc)."""

    def build(self, step):
        n = len(step.grads_and_vars)
        applies, waits, chains = [None] * n, [None] * n, {}
        for i in reversed(range(n)):
            var = step.grads_and_vars[i][1]
            chain = chains.setdefault(var.device, [])
            if not chain:
                gates = [step.gate] if step.gate is not None else []
            elif len(chain) < PULL_LAG:  # nothing pulled yet: the receipt of the one before
                gates = [applies[chain[-1]]]
            else:
                gates = [waits[chain[-PULL_LAG]][1]]
            applies[i] = step.push(i, step.step_read, gates, True)
            waits[i] = _await_one(applies[i], step.tokens[i], var, step.step_read,
                                  step.after_each)
            chain.append(i)
        return _ended(step, ([d for _, d in waits], _tokens_step([r for r, _ in waits])))


class Background(Pipelined):
    """The chain; the step ends once applied, the pulls in a loop of the worker's."""

    ends_at_apply = True  # the chief's token of each new global step ends the step

    def build(self, step):
        return _background(step, _chains(step, self.window_bytes))


class Priority:
    """Background pulls; gradients pushed in forward order from sender threads.

    Args:
      row, chunk_bytes, window_bytes: as `Pipelined`'s.
      group_bytes: consecutive gradients of a ps task each under this many bytes pushed
        together (`priority_pushes.build`'s fusion_bytes); 0: each alone.
    """

    def __init__(self, row, chunk_bytes, window_bytes=0, group_bytes=0):
        self.row = row
        self.chunk_bytes = chunk_bytes
        self.window_bytes = window_bytes
        self.group_bytes = group_bytes

    def build(self, step):
        queued, senders = priority_pushes.build(
            step.grads_and_vars, step.step_read, step.worker_device,
            lambda i, payload, tag: step.push(i, tag, [], False, payload),
            self.window_bytes, fusion_bytes=self.group_bytes)
        built = _background(step, queued)
        return built._replace(loops=built.loops + senders, step_made=step.step_read + 1)


# The class that builds each row of tfhp.modes.TRANSFERS (tests/replication/transfers_test.py
# checks both agree); `register` adds a script's own.
BUILDERS = {'whole_step': WholeStep, 'pipelined': Pipelined, 'pull_clocked': PullClocked,
            'background': Background, 'priority': Priority}


def make(name, chunk_bytes=0, window_bytes=0, group_bytes=0):
    """The transfer of row `name` of `tfhp.modes.TRANSFERS`, given the sizes its row takes
    (chunk_bytes 0: `tfhp.modes.DEFAULT_CHUNK_BYTES`); ValueError for a size it does not."""
    row = modes.transfer_of(None, name)
    problem = modes.check_transfer(row, None, chunk_bytes, window_bytes, group_bytes)
    if problem:
        raise ValueError(problem)
    sizes = dict(chunk_bytes=chunk_bytes or modes.DEFAULT_CHUNK_BYTES) if row.chunked else {}
    sizes.update({k: v for k, v in (('window_bytes', window_bytes),
                                    ('group_bytes', group_bytes)) if v})
    return BUILDERS[row.name](row, **sizes)


def register(row, builder):
    """Adds a transfer at run time: its `tfhp.modes.Transfer` row and its class, whose
    builder(row[, chunk_bytes=][, window_bytes=][, group_bytes=]) has a `build(Step)` ->
    `Built` (docs/extending.md)."""
    modes.register_transfer(row)
    BUILDERS[row.name] = builder


def released(step, applies):
    """Step 4 of a chunked transfer whose pushes are `applies` (in the order of
    grads_and_vars): each variable's token taken once its push is in, then its after_each;
    the step ends once all ran (`_ended`)."""
    return _ended(step, _await_each(applies, step))


def _ended(step, done_and_new_step):
    """A chunked step ending once each variable's after_each ran: L moves to the tokens'
    step, which is also the step it made (the chief moves the global step once every
    variable is out, so a read of it after this step may still see the one before)."""
    done, new_step = done_and_new_step
    with tf.control_dependencies(done):
        train_op = step.local_step.assign(new_step, read_value=False)
    return Built(train_op, [], None, [], new_step)


def _num_bytes(var):
    return var.shape.num_elements() * var.dtype.base_dtype.size


def _chains(step, window_bytes):
    """Each gradient pushed in its ps task's chain, last variable first, each after the
    receipt of the last push that, with those after it and its own, exceeds window_bytes
    (`_window_gate`); returns the applies in the order of grads_and_vars."""
    applies, sent = [None] * len(step.grads_and_vars), {}  # ps device -> [(apply, bytes)]
    for i in reversed(range(len(step.grads_and_vars))):
        var = step.grads_and_vars[i][1]
        size = _num_bytes(var)
        waited = _window_gate(sent.get(var.device, []), size, window_bytes)
        gates = [waited] if waited is not None else (
            [step.gate] if step.gate is not None else [])
        applies[i] = step.push(i, step.step_read, gates, True)
        sent.setdefault(var.device, []).append((applies[i], size))
    return applies


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


def _await_one(apply, queue, var, step_read, after_each):
    """Step 4 for one variable: (its token newer than step_read, taken once `apply` ran
    (None: at once), then after_each(var, token) or the token itself)."""
    with tf.control_dependencies([apply] if apply is not None else []):
        received = barriers.dequeue_newer_than(queue, step_read)
    return received, after_each(var, received) if after_each else received


def _await_each(applies, step, step_read=None):
    """Step 4 of a chunked transfer: `_await_one` for each variable (applies None: the
    background pulls' loop); returns (the ops after each, the tokens' step).

    The new local step is the tokens' step, not the global step's: the chief moves the global
    step only after the last variable's tokens are out, so a read of it here could still see
    the old step (and tag the next gradients stale)."""
    step_read = step.step_read if step_read is None else step_read
    waits = [_await_one(applies[i] if applies else None, queue, var, step_read, step.after_each)
             for i, (queue, (_, var)) in enumerate(zip(step.tokens, step.grads_and_vars))]
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


def _background(step, sent):
    """Background pulls' steps 3-4 once `sent` (the pushes, or the ops queueing them) exist.

    The step ends once the global step has moved past the tag (a token of step.step_tokens),
    so a read after it sees the step this one made, as the whole step's does; with priority
    pushes (step_tokens None) once its gradients are queued for the senders, so the next
    forward pass starts on the first layers while the later ones are still pushed. The loop
    takes each variable's token newer than local_step (the step the copies hold), runs
    after_each, and moves local_step; the pulls are in once it passed the step last sent.
    """
    with tf.device(step.worker_device):
        pushed = tf.Variable(tf.constant(0, tf.int64), trainable=False,
                             collections=[tf.GraphKeys.LOCAL_VARIABLES],
                             name='sync_pushed_step')
    if step.step_tokens is None:
        step_op = tf.group(*sent, pushed.assign(step.step_read))
    else:
        with tf.control_dependencies(sent):
            stepped = barriers.dequeue_newer_than(step.step_tokens, step.step_read)
        step_op = tf.group(stepped, pushed.assign(step.step_read))
    done, new_step = _await_each(None, step, step.local_step.read_value())
    with tf.control_dependencies(done):
        loop = step.local_step.assign(new_step, read_value=False, name='background_pulls')
    drained = tf.greater(step.local_step.read_value(), pushed.read_value())
    return Built(step_op, [loop], drained,
                 [pushed.assign(step.global_step.read_value() - 1)], None)

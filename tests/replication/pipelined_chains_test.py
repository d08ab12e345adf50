"""The chunked transfers send one chunk at a time to each ps task, each task on a chain of its
own: a chunk waits for the last one sent to the same task, never for another task's; with a
window of bytes (--ps_window_bytes) for the last one beyond it; pull-clocked
(--ps_transfer=pull_clocked) for the pull of the one two before it in its chain."""
import pytest
import tensorflow.compat.v1 as tf

from tfhp.ops import barriers
from tfhp.replication import sync_replicas
from tfhp.replication import transfers

WORKER = '/job:worker/task:0/device:CPU:0'
PS = ['/job:ps/task:%d/device:CPU:0' % k for k in range(2)]


def _gates(num_ps=2, window_bytes=0):
    """{variable index: the variable index whose apply its send waits for, or None}, for four
    variables of 12 bytes placed on ps 0, 1, 0, 1 (num_ps=2) or all on ps 0."""
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        variables = []
        for i in range(4):
            with tf.device(PS[i % num_ps]):
                variables.append(tf.Variable(tf.zeros([3]), name='v%d' % i))
        with tf.device(WORKER):
            grads = [tf.ones([3]) * (i + 1) for i in range(4)]
        sync = sync_replicas.SyncReplicas(
            None, WORKER, 1, 1, is_chief=False,
            transfer=transfers.make('pipelined', window_bytes=window_bytes))
        sync.apply_worker_gradients(list(zip(grads, variables)),
                                    lambda: tf.train.GradientDescentOptimizer(1.0), global_step)
        applies = {}
        for op in tf.get_default_graph().get_operations():
            if op.type == 'ResourceAccumulatorApplyGradient':
                sent = op.inputs[2].op  # the identity on the worker that gates the send
                applies[op] = (grads.index(sent.inputs[0]), sent)
        gates = {}
        for var, sent in applies.values():
            waited = [applies[c][0] for c in sent.control_inputs if c in applies]
            assert sent.device == WORKER and len(waited) <= 1
            gates[var] = waited[0] if waited else None
        return gates


def test_each_ps_task_has_its_own_chain_last_variable_first():
    # Backward order: 3 then 1 go first to ps 1, 2 then 0 to ps 0; nothing waits across tasks.
    assert _gates() == {3: None, 2: None, 1: 3, 0: 2}


def test_a_window_lets_pushes_go_while_the_ps_has_not_received_those_before():
    assert _gates(num_ps=1) == {3: None, 2: 3, 1: 2, 0: 1}
    # 24 bytes: two 12-byte pushes on the way at once, each waiting for the one two before.
    assert _gates(num_ps=1, window_bytes=24) == {3: None, 2: None, 1: 3, 0: 2}
    assert _gates(num_ps=1, window_bytes=48) == {3: None, 2: None, 1: None, 0: None}


def test_a_pull_clocked_push_waits_for_the_pull_two_before_it_in_its_chain():
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        variables = []
        for i in range(6):
            with tf.device(PS[i % 2]):
                variables.append(tf.Variable(tf.zeros([3]), name='v%d' % i))
        with tf.device(WORKER):
            grads = [tf.ones([3]) * (i + 1) for i in range(6)]

        def pull(var, token):
            with tf.device(WORKER):
                return tf.identity(token, name='pull_' + var.op.name)
        sync = sync_replicas.SyncReplicas(None, WORKER, 1, 1, is_chief=False,
                                          transfer=transfers.make('pull_clocked'))
        sync.apply_worker_gradients(list(zip(grads, variables)),
                                    lambda: tf.train.GradientDescentOptimizer(1.0), global_step,
                                    after_each=pull)
        sends = {op: op.inputs[2].op for op in tf.get_default_graph().get_operations()
                 if op.type == 'ResourceAccumulatorApplyGradient'}
        index = {apply: grads.index(sent.inputs[0]) for apply, sent in sends.items()}
        gates = {}
        for apply, sent in sends.items():
            gates[index[apply]] = (
                ['receipt %d' % index[c] for c in sent.control_inputs if c in index] +
                [c.name.rsplit('/', 1)[-1] for c in sent.control_inputs
                 if c.name.rsplit('/', 1)[-1].startswith('pull_')])
    # ps 1's chain is v5, v3, v1 and ps 0's v4, v2, v0: the second push of each waits for the
    # receipt of the first, the third for the pull of the first.
    assert gates == {5: [], 4: [], 3: ['receipt 5'], 2: ['receipt 4'], 1: ['pull_v5'],
                     0: ['pull_v4']}


def test_a_transfer_refuses_a_size_its_row_does_not_take():
    with pytest.raises(ValueError, match='--ps_window_bytes=24 does not apply to '
                                         '--ps_transfer=pull_clocked'):
        transfers.make('pull_clocked', window_bytes=24)
    with pytest.raises(ValueError, match='--ps_transfer=background needs every worker'):
        sync_replicas.SyncReplicas(None, WORKER, 1, 2, is_chief=False,
                                   transfer=transfers.make('background'))


@pytest.mark.parametrize('name', ['pipelined', 'pull_clocked'])
def test_a_pipelined_step_says_the_global_step_it_made_before_the_chief_moves_it(name):
    # The chief releases each variable's tokens, then moves the global step once all are out:
    # a worker whose step ended in between read the step before and ran one step more than
    # the others, alone, until its peers gave it up (2 jobs of 108, 3 ps at 1 Gbit/s).
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        variables = [tf.Variable(tf.zeros([3]), name='v%d' % i) for i in range(3)]
        grads = [tf.ones([3]) for _ in variables]
        sync = sync_replicas.SyncReplicas(None, '', 1, 1, is_chief=False,
                                          transfer=transfers.make(name))
        update = sync.apply_worker_gradients(
            list(zip(grads, variables)), lambda: tf.train.GradientDescentOptimizer(1.0),
            global_step)
        # What the chief's releases leave in each variable's queue: one token of step 1.
        release = [barriers.step_token_queue(v.device, '%s/%s' % (sync_replicas.TOKEN_QUEUE,
                                                                  v.op.name)).enqueue(
            tf.constant(1, tf.int64)) for v in variables]
        with tf.Session() as sess:
            sess.run([tf.global_variables_initializer(), tf.local_variables_initializer()])
            sess.run(update.hooks[0]._init_op)  # pylint: disable=protected-access
            sess.run(release)
            _, made = sess.run([update.train_op, update.step_made],
                               options=tf.RunOptions(timeout_in_ms=30000))
            assert (made, sess.run(global_step)) == (1, 0)


def _reads_global_step_before_a_push(replicas_to_aggregate, name):
    """Whether any push (an accumulator's apply) of a 2-replica step waits for a read of the
    global step."""
    with tf.Graph().as_default():
        global_step = tf.train.get_or_create_global_step()
        with tf.device(PS[0]):
            variables = [tf.Variable(tf.zeros([3]), name='v%d' % i) for i in range(2)]
        with tf.device(WORKER):
            grads = [tf.ones([3]) * (i + 1) for i in range(2)]
        sync = sync_replicas.SyncReplicas(None, WORKER, replicas_to_aggregate, 2,
                                          is_chief=False, transfer=transfers.make(name))
        sync.apply_worker_gradients(list(zip(grads, variables)),
                                    lambda: tf.train.GradientDescentOptimizer(1.0), global_step)
        pushes = [op for op in tf.get_default_graph().get_operations()
                  if op.type == 'ResourceAccumulatorApplyGradient']
        seen, todo = set(), list(pushes)
        while todo:
            op = todo.pop()
            if op not in seen:
                seen.add(op)
                todo += [t.op for t in op.inputs] + list(op.control_inputs)
        return len(pushes) == 2 and any(
            op.type == 'ReadVariableOp' and op.inputs[0].op.name == global_step.op.name
            for op in seen)


@pytest.mark.parametrize('name', ['whole_step', 'pipelined', 'pull_clocked'])
def test_only_spares_make_a_push_wait_for_the_late_check(name):
    # With spares a gradient may be late and is counted before it leaves; without, the step
    # cannot move before it is in, so none waits for a read of the global step.
    assert _reads_global_step_before_a_push(1, name)
    assert not _reads_global_step_before_a_push(2, name)

"""Priority pushes (--ps_push_priority): a sender takes the gradient of the earliest variable in
forward order among those queued, whatever order backprop made them in, and pushes its buffered
value tagged with its step; the senders of a ps task wait while its window is full."""
import threading

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp.replication import priority_pushes

CPU = '/device:CPU:0'


def _build(payloads, senders_per_task=1, fusion_bytes=0):
    """Four variables; push(i) logs (i, tag, the payload's sum) in a queue. Returns (queued
    ops, senders, the log's dequeue, the tag placeholder)."""
    variables = [tf.Variable(tf.zeros([2]), name='v%d' % i) for i in range(len(payloads))]
    log = tf.FIFOQueue(-1, [tf.int64, tf.int64, tf.float32], shapes=[[], [], []])
    tag = tf.placeholder(tf.int64, [])

    def push(i, payload, step):
        total = tf.add_n([tf.reduce_sum(part) for part in tf.nest.flatten(payload)])
        return log.enqueue((tf.constant(i, tf.int64), step, total))

    queued, senders = priority_pushes.build(list(zip(payloads, variables)), tag, CPU, push,
                                            senders_per_task=senders_per_task,
                                            fusion_bytes=fusion_bytes)
    return queued, senders, log.dequeue(), tag


def test_the_first_variable_ready_goes_first_whatever_order_backprop_made_them():
    with tf.Graph().as_default():
        payloads = [tf.fill([2], float(i + 1)) for i in range(3)]
        payloads.append((tf.ones([3]), tf.ones([1])))  # a compressed payload: two tensors
        queued, senders, logged, tag = _build(payloads)
        sender, = senders  # one ps task (every variable on the default device), one sender
        with tf.Session() as session:
            sender.start(session, tf.train.Coordinator())
            session.run(tf.local_variables_initializer())
            session.run([queued[3], queued[1]], {tag: 7})  # backprop made 3, then 1
            sender(session, session.run)
            session.run([queued[2], queued[0]], {tag: 7})  # then 2 and 0 (the first layer)
            for _ in range(3):
                sender(session, session.run)
            order = [session.run(logged) for _ in range(4)]
    # 1 was the first of what was made; then 0 passes 2 and 3, which were made before it.
    assert [int(i) for i, _, _ in order] == [1, 0, 2, 3]
    assert all(int(step) == 7 for _, step, _ in order)
    np.testing.assert_allclose([total for _, _, total in order], [4.0, 2.0, 6.0, 4.0])


def test_small_gradients_of_a_task_are_grouped_in_forward_order_up_to_the_bytes():
    groups = priority_pushes._groups  # pylint: disable=protected-access
    sizes_and_tasks = [(8, 'a'), (8, 'b'), (8, 'a'), (100, 'a'), (8, 'a'), (8, 'b'),
                       (8, 'a'), (8, 'a')]
    assert groups(sizes_and_tasks, 0) == [[i] for i in range(8)]
    # Task a's small ones run 0, 2 (then 3, large, alone) and 4, 6, 7 (16 bytes at most);
    # task b's 1 and 5 are consecutive among b's.
    assert groups(sizes_and_tasks, 16) == [[0, 2], [1, 5], [3], [4, 6], [7]]
    assert groups(sizes_and_tasks, 64) == [[0, 2], [1, 5], [3], [4, 6, 7]]


def test_a_group_is_queued_once_all_its_gradients_are_made_and_pushed_in_one_turn():
    with tf.Graph().as_default():
        payloads = [tf.fill([2], float(i + 1)) for i in range(3)] + [tf.fill([8], 1.0)]
        # 8-byte gradients 0-2 in groups of at most 16 bytes, [0, 1] and [2]; 3 (32) alone.
        queued, senders, logged, tag = _build(payloads, fusion_bytes=16)
        sender, = senders
        assert len(queued) == 3  # one queue element a group
        with tf.Session() as session:
            sender.start(session, tf.train.Coordinator())
            session.run(tf.local_variables_initializer())
            session.run([queued[2], queued[1]], {tag: 5})  # backprop made 3, then 2
            sender(session, session.run)
            session.run(queued[0], {tag: 5})  # then 1 and 0: their group passes 3
            sender(session, session.run)
            bounded = tf.RunOptions(timeout_in_ms=10000)  # a missing push fails, not hangs
            pushed = [int(session.run(logged, options=bounded)[0]) for _ in range(3)]
            sender(session, session.run)
            pushed.append(int(session.run(logged, options=bounded)[0]))
    # The second turn pushed 0 and 1 together (one run: three logged after two turns).
    assert pushed[0] == 2 and sorted(pushed[1:3]) == [0, 1] and pushed[3] == 3


def _ends_within(turn, seconds):
    """Whether turn() raises RuntimeError (the end of a loop) within `seconds`."""
    ended = []

    def wait():
        try:
            turn()
        except RuntimeError:
            ended.append(True)
    waiter = threading.Thread(target=wait, daemon=True)
    waiter.start()
    waiter.join(seconds)
    return bool(ended)


def test_a_waiting_sender_ends_with_its_session_and_a_new_session_drops_what_was_left():
    with tf.Graph().as_default():
        queued, senders, logged, tag = _build([tf.ones([2]), tf.ones([2])])
        sender, = senders
        with tf.Session() as old, tf.Session() as new:
            with pytest.raises(ValueError, match='Sender.start'):
                sender(old, old.run)  # never started: said, not a quiet end of its loop
            coord = tf.train.Coordinator()
            sender.start(old, coord)
            old.run(tf.local_variables_initializer())
            old.run(queued[1], {tag: 3})  # a step cut short: 1 queued, never pushed
            sender(old, old.run)  # takes 1
            assert not _ends_within(lambda: sender(old, old.run), 0.3)  # waits for a gradient
            coord.request_stop()
            assert _ends_within(lambda: sender(old, old.run), 1.0)
            coord = tf.train.Coordinator()
            old.run(queued[0], {tag: 3})  # left by the old session: dropped by the new one
            sender.start(new, coord)
            assert _ends_within(lambda: sender(old, old.run), 1.0)  # the old one's senders end
            new.run(tf.local_variables_initializer())
            new.run(queued[1], {tag: 4})
            sender(new, new.run)
            bounded = tf.RunOptions(timeout_in_ms=10000)
            index, step, _ = new.run(logged, options=bounded)
    assert (int(index), int(step)) == (1, 4)  # 0 of the old session was never pushed


def test_senders_per_task_and_refusals():
    with tf.Graph().as_default():
        _, senders, _, _ = _build([tf.ones([2])] * 2, senders_per_task=2)
        assert len(senders) == 2 and len({s.name for s in senders}) == 2
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='v0 sends one of shape'):
            _build([tf.placeholder(tf.float32, [None])])


def _has_room(credit):
    """Whether credit.wait_for_room returns within 0.2 s (it is left blocked otherwise)."""
    waiter = threading.Thread(target=credit.wait_for_room, daemon=True)
    waiter.start()
    waiter.join(0.2)
    return not waiter.is_alive()


def test_a_window_of_bytes_bounds_the_pushes_on_the_way():
    credit = priority_pushes._Credit(10)  # pylint: disable=protected-access
    credit.add(6)
    assert _has_room(credit)  # 6 < 10: another push may go
    credit.add(6)
    assert not _has_room(credit)  # 12: full until a push is received
    credit.add(-6)
    assert _has_room(credit)
    one_at_a_time = priority_pushes._Credit(0)  # pylint: disable=protected-access
    assert _has_room(one_at_a_time)
    one_at_a_time.add(1)
    assert not _has_room(one_at_a_time)
    one_at_a_time.add(-1)  # lets the waiter left blocked go

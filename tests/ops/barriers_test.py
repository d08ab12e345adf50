"""Done tokens: taken in order, at once, and none lost to a serving task polling for them."""
import random
import threading
import time

import pytest
import tensorflow.compat.v1 as tf

from tfhp.launcher import plan
from tfhp.ops import barriers


def test_taking_done_tokens_gives_those_queued_in_order_and_never_waits():
    with tf.Graph().as_default():
        take = barriers.take_done_tokens('/cpu:0')
        signals = [barriers.signal_done(['/cpu:0'], 0), barriers.signal_done(['/cpu:0'], 2),
                   barriers.signal_done(['/cpu:0'], 1, failed=True)]
        # A take that waited for a token would fail this bound instead of returning.
        bounded = tf.RunOptions(timeout_in_ms=5000)
        with tf.Session() as sess:
            assert list(sess.run(take, options=bounded)) == []
            for signal in signals:
                sess.run(signal)
            assert list(sess.run(take, options=bounded)) == [0, 2, -2]
            assert list(sess.run(take, options=bounded)) == []


@pytest.mark.cluster
def test_a_serving_task_polling_for_tokens_loses_none_sent_from_another_server():
    # The hazard it guards against is a race (a timed-out dequeue taking a token as it
    # arrives), so many tokens arrive at random moments, spaced about as a polling timeout
    # would be (10 ms there lost 3% of them), while the serving side polls.
    ps_port, worker_port = plan.free_ports(2)
    spec = tf.train.ClusterSpec({'ps': ['127.0.0.1:%d' % ps_port],
                                 'worker': ['127.0.0.1:%d' % worker_port]})
    ps = tf.train.Server(spec, job_name='ps', task_index=0)
    worker = tf.train.Server(spec, job_name='worker', task_index=0)
    device = '/job:ps/task:0/cpu:0'
    with tf.Graph().as_default() as serving_graph:
        take = barriers.take_done_tokens(device)
    with tf.Graph().as_default() as sending_graph:
        token = tf.placeholder(tf.int32, [])
        send = barriers.done_queue(device).enqueue(token)
    count = 200
    bounded = tf.RunOptions(timeout_in_ms=10000)
    with tf.Session(ps.target, graph=serving_graph) as serving, \
            tf.Session(worker.target, graph=sending_graph) as sending:
        serving.run(take, options=bounded)  # the session and queue exist before tokens come

        def send_all():
            for i in range(count):
                time.sleep(random.uniform(0, 0.02))
                sending.run(send, {token: i}, options=bounded)
        sender = threading.Thread(target=send_all)
        sender.start()
        received, deadline = [], time.monotonic() + 60
        while len(received) < count and time.monotonic() < deadline:
            received.extend(int(t) for t in serving.run(take, options=bounded))
        sender.join(timeout=60)
    assert received == list(range(count))

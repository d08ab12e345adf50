"""Ready queues of background pulls: a copy's reads wait for a token of its own master's queue,
and the step they hold is the token's."""
import pytest
import tensorflow.compat.v1 as tf

from tfhp.replication import background_pulls


def _variable(name, value):
    return tf.get_variable(name, initializer=tf.constant(value), use_resource=True)


def test_reads_wait_for_their_own_release_and_carry_its_step():
    with tf.Graph().as_default():
        masters = [_variable('m0', 0.0), _variable('m1', 0.0)]
        copies = [_variable('c0', 1.0), _variable('c1', 2.0)]
        # Reads built before the gate, as a tower's are.
        product = copies[0] * copies[1]
        doubled = copies[0] * 2.0
        ready = background_pulls.ReadyQueues('/cpu:0', num_towers=1)
        step = ready.gate([(0, c, m) for c, m in zip(copies, masters)])
        late_read = copies[0].read_value()  # built after the gate: not gated
        assign = copies[1].assign(5.0)
        releases = [ready.release(m, 8) for m in masters]
        seed = ready.seed(tf.constant(7, tf.int64))
        bounded = tf.RunOptions(timeout_in_ms=300)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(seed)
            assert sess.run([product, step]) == [2.0, 7]
            with pytest.raises(tf.errors.DeadlineExceededError):  # no token: the reads wait
                sess.run(product, options=bounded)
            assert sess.run(late_read, options=bounded) == 1.0
            sess.run([assign, releases[0]])
            # c0's reads wait for c0's master only.
            assert sess.run(doubled, options=bounded) == 2.0
            sess.run(releases)
            assert sess.run([product, step]) == [5.0, 8]
            sess.run(releases[0])
            sess.run(seed)  # a new session's seed drops what was left and starts again
            assert sess.run([product, step]) == [5.0, 7]
            with pytest.raises(tf.errors.DeadlineExceededError):
                sess.run(doubled, options=bounded)

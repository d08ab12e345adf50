"""Gradients gated on their variable's readers: the readers found, the update unchanged."""
import numpy as np
import tensorflow.compat.v1 as tf

from tfhp.ops import in_place


def _layer():
    """A dense layer with weight decay: its weights are read by the forward matmul, the
    backward input-gradient matmul and the L2 term's gradient."""
    x = tf.constant(np.random.RandomState(0).normal(size=[4, 6]).astype(np.float32))
    w = tf.get_variable('w', initializer=np.random.RandomState(1).normal(
        size=[6, 3]).astype(np.float32), use_resource=True)
    hidden = tf.matmul(tf.identity(x), w, name='forward')
    loss = tf.reduce_sum(tf.square(hidden)) + 0.1 * tf.nn.l2_loss(w)
    return x, w, loss


def test_readers_follow_the_read_through_aliasing_ops():
    with tf.Graph().as_default():
        _, w, loss = _layer()
        tf.gradients(loss, [w])
        names = {op.name for op in in_place.readers(w)}
        assert 'forward' in names and 'L2Loss' in names
        # The input gradient's matmul reads w too (transposed); the weight gradient does not.
        assert any(n.startswith('gradients/forward_grad/MatMul') and not n.endswith('_1')
                   for n in names)
        assert not any(n.endswith('forward_grad/MatMul_1') for n in names)
        assert in_place.readers(tf.constant(1.0)) == []


def test_gated_gradients_wait_for_every_reader_and_update_the_same():
    updates = []
    for gate in (False, True):
        with tf.Graph().as_default():
            _, w, loss = _layer()
            (grad,) = tf.gradients(loss, [w])
            if gate:
                (grad,) = in_place.after_reads([grad], [w], set(tf.get_default_graph().get_operations()),
                                              min_bytes=0)
                assert set(in_place.readers(w)) - {grad.op} <= set(grad.op.control_inputs)
                assert in_place.after_reads([None], [w], set()) == [None]
                # Readers outside `within` (another replica's) never gate.
                assert in_place.after_reads([grad], [w], set(), min_bytes=0)[0] is grad
            step = tf.train.GradientDescentOptimizer(0.1).apply_gradients([(grad, w)])
            with tf.Session() as sess:
                sess.run(tf.global_variables_initializer())
                sess.run(step)
                updates.append(sess.run(w))
    np.testing.assert_allclose(updates[0], updates[1], rtol=1e-6)


def test_sparse_gradients_stay_sparse():
    with tf.Graph().as_default():
        table = tf.get_variable('table', [10, 2], use_resource=True)
        loss = tf.reduce_sum(tf.nn.embedding_lookup(table, [1, 3]))
        (grad,) = in_place.after_reads(tf.gradients(loss, [table]), [table],
                                       set(tf.get_default_graph().get_operations()),
                                       min_bytes=0)
        assert isinstance(grad, tf.IndexedSlices)


def test_variables_below_the_size_bound_are_not_gated():
    with tf.Graph().as_default():
        _, w, loss = _layer()   # 72 bytes
        (grad,) = tf.gradients(loss, [w])
        ops = set(tf.get_default_graph().get_operations())
        assert in_place.after_reads([grad], [w], ops)[0] is grad
        assert in_place.after_reads([grad], [w], ops, min_bytes=72)[0] is not grad
        assert in_place.after_reads([grad], [w], ops, min_bytes=73)[0] is grad

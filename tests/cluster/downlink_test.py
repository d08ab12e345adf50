"""Compressed downlink deltas (--downlink_compression) in one process: a chief worker's graph on
an in-process server. The copies follow the published value exactly, what the payloads left out
is the master's lead, and a worker's step reads no master."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.cluster import sync_replicas_test
from tfhp import compression
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.ops import session_hooks
from tfhp.replication import distributed_replicated
from tfhp.replication import downlink
from tfhp.replication import sync_replicas

pytestmark = pytest.mark.cluster
DEVICE = '/job:localhost/replica:0/task:0/cpu:%d'
PS, WORKER = DEVICE % 0, DEVICE % 1
LR = 0.5
# loss = mean(x @ w): the gradient is x's mean over the batch, [1, 2], at any w.
IMAGES = np.array([[1.0, 2.0]], np.float32)


@pytest.fixture(scope='module')
def server():
    return tf.train.Server.create_local_server(config=tf.ConfigProto(device_count={'CPU': 2}))


class _Job:
    """One chief worker (the only replica) of distributed_replicated on `server`."""

    def __init__(self, target, scheme, container):
        topology = topology_lib.Topology(
            tower_devices=(WORKER,), variable_devices=(PS,), input_device=WORKER,
            is_chief=True, graph_mode='between_graph', job_name='worker', task_index=0,
            num_workers=1)
        self.graph = tf.Graph()
        with self.graph.as_default(), self.graph.container(container):
            with tf.device(PS):
                tf.train.get_or_create_global_step()  # the step increments it
            sync = sync_replicas.SyncReplicas(None, WORKER, 1, 1, is_chief=True)
            deltas = downlink.Downlink(compression.get(scheme)) if scheme else None
            manager = distributed_replicated.DistributedReplicated(
                [WORKER], [PS], WORKER, sync=sync, downlink=deltas)
            self.ops = step.build_train_step(
                sync_replicas_test._Fixed(IMAGES), sync_replicas_test._model, manager,
                lambda: tf.train.GradientDescentOptimizer(LR), topology)
            (self.master,) = tf.trainable_variables()
            (self.copy,) = manager.trainable_variables(0)
            self.published = deltas.published(self.master) if deltas else None
            init = [tf.global_variables_initializer(), tf.local_variables_initializer()]
        self.sess, self.coord = sync_replicas_test.open_worker_session(
            target, self.graph, init, self.ops.hooks)

    def step(self):
        self.sess.run(self.ops.train_op, options=tf.RunOptions(timeout_in_ms=20000))

    def read(self):
        """(master, copy, published) as arrays."""
        published = self.copy if self.published is None else self.published
        return self.sess.run([self.master, self.copy, published])

    def variables_read_by_a_step(self, resync=False):
        """The variables whose values the train op reads (walking inputs and control
        inputs): outside the branch that copies the published values (the session's first
        pull), or (resync) inside it."""
        seen, todo, handles = set(), [self.ops.train_op], set()  # a tf.group: an op
        while todo:
            op = todo.pop()
            if op in seen:
                continue
            seen.add(op)
            if op.type == 'ReadVariableOp':
                handle = op.inputs[0]
                # In a branch of the pull's cond the handle comes through a Switch: output 0
                # is the false branch, the session's first pull.
                in_resync = handle.op.type == 'Switch' and handle.value_index == 0
                if handle.op.type == 'Switch':
                    handle = handle.op.inputs[0]
                if in_resync == resync:
                    handles.add(handle.op.name)
            todo.extend(t.op for t in op.inputs)
            todo.extend(op.control_inputs)
        return handles

    def restart_in_the_window(self):
        """What a worker that (re)starts between the chief's apply and its publish has: the
        session's start ops run again, but its copies hold the published value of one delta
        before the step its local step names (zeros here: the value before the first)."""
        for hook in self.ops.hooks:
            if isinstance(hook, session_hooks.RunAtStart):
                hook.after_create_session(self.sess, self.coord)
        self.sess.run(self.copy.assign(tf.zeros_like(self.copy)))

    def close(self):
        self.coord.request_stop()
        self.sess.close()


def test_sign_deltas_by_hand(server):
    job = _Job(server.target, 'sign', 'sign')
    try:
        job.step()
        # master -0.5 * [1, 2]; its delta from the published zeros goes as signs scaled by
        # the mean magnitude 0.75.
        master, copy, published = job.read()
        np.testing.assert_allclose(master.ravel(), [-0.5, -1.0], rtol=1e-6)
        np.testing.assert_allclose(copy.ravel(), [-0.75, -0.75], rtol=1e-6)
        np.testing.assert_array_equal(copy, published)
        job.step()
        # master [-1, -2]; delta [-0.25, -1.25], again scaled by 0.75: the residual of the
        # first step went out in the second.
        master, copy, published = job.read()
        np.testing.assert_allclose(master.ravel(), [-1.0, -2.0], rtol=1e-6)
        np.testing.assert_allclose(copy.ravel(), [-1.5, -1.5], rtol=1e-6)
        np.testing.assert_array_equal(copy, published)
    finally:
        job.close()


def test_float16_deltas_track_the_master_within_its_rounding(server):
    job = _Job(server.target, 'float16', 'float16')
    try:
        for _ in range(5):
            job.step()
        master, copy, published = job.read()
        np.testing.assert_allclose(master.ravel(), [-2.5, -5.0], rtol=1e-6)
        np.testing.assert_array_equal(copy, published)
        # What float16 rounding left out stays behind, below one delta's rounding.
        np.testing.assert_allclose(copy, master, atol=5e-3)
    finally:
        job.close()


def test_a_step_reads_payloads_not_masters(server):
    plain = _Job(server.target, None, 'plain')
    deltas = _Job(server.target, 'sign', 'reads')
    try:
        master = plain.master.op.name
        assert master in plain.variables_read_by_a_step()   # the refresh reads it
        read = deltas.variables_read_by_a_step()
        assert master not in read and master + '/downlink_published' not in read
        assert {master + '/downlink_payload_0', master + '/downlink_payload_1'} <= read
        assert deltas.variables_read_by_a_step(resync=True) == {master + '/downlink_published'}
    finally:
        plain.close()
        deltas.close()


def test_a_worker_that_restarts_between_apply_and_publish_is_back_with_its_first_pull(server):
    job = _Job(server.target, 'sign', 'restart')
    try:
        job.step()
        job.restart_in_the_window()
        job.step()  # the session's first pull copies the published value
        _, copy, published = job.read()
        np.testing.assert_array_equal(copy, published)
        assert np.abs(published).sum() > 0
        job.step()  # and the next ones add deltas to it
        master, copy, published = job.read()
        np.testing.assert_array_equal(copy, published)
        np.testing.assert_allclose(master.ravel(), [-1.5, -3.0], rtol=1e-6)
    finally:
        job.close()

"""Job control: the global step at which a job ends, and a stop request any task can make.

Both live on the coordinator, the task that holds the global step (ps task 0), which publishes
them before anyone can use them (`publish`); in an all-reduce job, without ps tasks, every worker
keeps its own and all-reduces the stop values each step (`all_reduce_max`):
  end: the global step at which synchronous workers stop. The chief sets it once its session is
    up, to --target_global_step, or to the global step it started from (0, or a checkpoint's)
    + warm-up + timed steps, so
    every worker, a restarted one included, ends at the same step: a worker that stopped by its
    own count while another still needed its gradient would leave that one waiting.
  stop: 0, or the number of the signal (SIGTERM, SIGINT) that some task of the job received.
Every worker reads (global step, end, stop) after each of its steps, in one tensor on the
coordinator's device (one transfer). A synchronous worker that sees a stop moves end down to
its global step + 2 with an atomic minimum: synchronous workers are within one step of each
other, so every one of them reaches that step and none waits for a peer that already stopped.
Asynchronous workers stop after their next step.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import collective

END = 'tfhp_end_step'
STOP = 'tfhp_stop'
NEVER = 2 ** 62
# Steps past the global step at which synchronous workers end after a stop (see above).
STOP_MARGIN = 2


def _handle(name, device):
    with tf.device(device):
        return tf.raw_ops.VarHandleOp(dtype=tf.int64, shape=[1], shared_name=name, container='')


def _read(name, device):
    with tf.device(device):
        return tf.raw_ops.ReadVariableOp(resource=_handle(name, device), dtype=tf.int64)


def _minimum(name, device, value):
    with tf.device(device):
        return tf.raw_ops.ResourceScatterMin(resource=_handle(name, device),
                                             indices=tf.constant([0]),
                                             updates=tf.reshape(value, [1]))


def publish(target, device):
    """Creates the coordinator's end (never) and stop (0) values; run by the coordinator."""
    graph = tf.Graph()
    with graph.as_default(), tf.device(device):
        init = tf.group(
            tf.raw_ops.AssignVariableOp(resource=_handle(END, device),
                                        value=tf.constant([NEVER], tf.int64)),
            tf.raw_ops.AssignVariableOp(resource=_handle(STOP, device),
                                        value=tf.constant([0], tf.int64)))
    with tf.Session(target, graph=graph,
                    config=tf.ConfigProto(device_filters=[_task(device)])) as sess:
        sess.run(init)


def _task(device):
    spec = tf.DeviceSpec.from_string(device)
    return '/job:%s/task:%d' % (spec.job, spec.task)


class StopRequester:
    """Sets the coordinator's stop value from a thread of its own (a signal's).

    Its session is made, and its first read done, while the coordinator answers, so a later
    request never makes a session (which could wait on a lost peer without a bound).

    Args:
      target: this task's server target.
      device: the coordinator's device.
      timeout_s: bound on one request.
    """

    def __init__(self, target, device, timeout_s):
        graph = tf.Graph()
        with graph.as_default():
            self._signum = tf.placeholder(tf.int64, [])
            with tf.device(device):
                self._request = tf.raw_ops.ResourceScatterMax(
                    resource=_handle(STOP, device), indices=tf.constant([0]),
                    updates=tf.reshape(self._signum, [1]))
                self._read = _read(STOP, device)
        self._options = tf.RunOptions(timeout_in_ms=int(timeout_s * 1000))
        self._sess = tf.Session(target, graph=graph,
                                config=tf.ConfigProto(device_filters=[_task(device)]))
        self._sess.run(self._read, options=self._options)

    def request(self, signum):
        """Asks every worker of the job to stop; returns False if the coordinator is gone."""
        try:
            self._sess.run(self._request, {self._signum: signum}, options=self._options)
            return True
        except tf.errors.OpError:
            return False


def all_reduce_max(num_workers, group_key, instance_key, timeout_s):
    """A `combine_stop` for all-reduce jobs: every worker gets the largest stop value.

    Without a ps there is no coordinator to hold one stop value, and reading the chief's from
    another worker inside a collective step aborts that step (measured, TF 2.21). So each worker
    keeps its own stop value and every step all-reduces them: all workers see a stop at the same
    step. The group is this worker's CPU in every worker; its keys must not be the manager's.
    """
    def combine(stop):
        return collective.reduce(stop, num_workers, group_key, instance_key, merge_op='Max',
                                 timeout_s=timeout_s)
    return combine


class WorkerControl:
    """The control ops of one worker's graph (build them before the graph is finalized).

    Args:
      global_step: the global step variable (on the coordinator, or this worker for all-reduce).
      device: where the end and stop values live: the coordinator's device, or this worker's
        own CPU in an all-reduce job.
      combine_stop: None, or combine_stop(stop) -> the job's stop value, run on `device` every
        step (`all_reduce_max`).
    """

    def __init__(self, global_step, device, combine_stop=None):
        self._global_step = global_step
        self._device = device
        self._combine_stop = combine_stop

    def read_after(self, train_op, step_made=None):
        """int64 [global step, end, stop] read once train_op has run: fetch it with the step.
        step_made: None, or the global step the step makes once applied, where train_op
        ends before the apply (`tfhp.replication.base.Update.step_made`)."""
        with tf.control_dependencies([train_op]):
            return self.read(combine=True, step_made=step_made)

    def read(self, combine=False, step_made=None):
        """int64 [global step, end, stop] now (the stop value combined only after a step)."""
        with tf.device(self._device):
            stop = _read(STOP, self._device)
            if combine and self._combine_stop is not None:
                stop = self._combine_stop(stop)
            control = tf.concat([_read(END, self._device), stop], 0)
        with tf.device(self._global_step.device):
            step = self._global_step.read_value()
            if step_made is not None:
                step = tf.maximum(step, step_made)
            step = tf.reshape(step, [1])
            return tf.concat([step, control], 0, name='job_control')

    def end_after(self, steps):
        """An op moving end down to (the global step now) + steps (an atomic minimum)."""
        return _minimum(END, self._device, self._global_step.read_value() + steps)

    def end_at(self, step):
        """An op moving end down to the global step `step` (a job's target, the same after
        every restart)."""
        return _minimum(END, self._device, tf.constant(step, tf.int64))

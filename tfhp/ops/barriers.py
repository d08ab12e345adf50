"""Cross-worker token queues: FIFOQueues that processes share by `shared_name` on one device.

A queue op built with the same shared_name, dtype and device in different graphs (one per worker)
names one queue in that device's task, so enqueues in one process wake dequeues in another.
Two protocols use them:
  done tokens: each worker, when it finishes, enqueues its index into the done queue of every
    task that only serves (ps tasks, in-graph workers), or -(index + 1) when it fails; a serving
    task exits once it has a token from every worker (`tfhp.cluster.servers.serve_until_done`),
    taking them with `take_done_tokens`, never with a dequeue bounded by a timeout: a dequeue
    cancelled by its run's deadline as a token arrives still takes the token, which is then lost
    (measured on TF 2.21: 15 of 500 tokens, enqueued across two servers, with 10 ms timeouts).
  step tokens: a synchronous step's chief enqueues one token per replica holding the new global
    step; a replica that sent a gradient computed at step L waits for a token newer than L
    (`dequeue_newer_than`), discarding older ones (`tfhp.replication.sync_replicas`).
"""
import tensorflow.compat.v1 as tf

DONE_QUEUE = 'tfhp_done_tokens'


def done_queue(device):
    """The done-token queue (int32 worker indices) of the task owning `device`."""
    with tf.device(device):
        return tf.FIFOQueue(-1, [tf.int32], shapes=[[]], shared_name=DONE_QUEUE,
                            name=DONE_QUEUE)


def take_done_tokens(device):
    """An int32 vector op: every token in the done queue of `device` now, in order (empty when
    there is none). It never waits, so it needs no timeout; the serving task must be the queue's
    only consumer (tokens arriving during the run stay for the next one)."""
    queue = done_queue(device)
    return queue.dequeue_up_to(queue.size())


def signal_done(devices, worker_index, failed=False):
    """An op enqueuing `worker_index` (-(worker_index + 1) if `failed`) into the done queue on
    each of `devices`."""
    token = -(worker_index + 1) if failed else worker_index
    return tf.group(*[done_queue(d).enqueue(tf.constant(token, tf.int32))
                      for d in devices], name='signal_done')


def step_token_queue(device, name):
    """A queue of int64 step tokens on `device`, shared by every worker under `name`."""
    with tf.device(device):
        return tf.FIFOQueue(-1, [tf.int64], shapes=[[]], shared_name=name, name=name)


def dequeue_newer_than(queue, step):
    """Dequeues tokens until one is greater than `step`; returns that token.

    Runs as one loop on the queue's device, so stale tokens are dropped without a round trip
    each. Blocks until a newer token arrives (bound it with RunOptions.timeout_in_ms).

    Args:
      queue: a queue from `step_token_queue`.
      step: int64 scalar tensor.
    Returns:
      An int64 scalar tensor.
    """
    with tf.device(queue.queue_ref.device):
        return tf.while_loop(lambda token: token <= step, lambda _: queue.dequeue(), [step],
                             back_prop=False, name='dequeue_newer_than')

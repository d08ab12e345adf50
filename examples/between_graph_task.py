"""One task of the hand-written between-graph job of examples/between_graph.py: ps or worker.

  ps      a plain `tf.train.Server` that holds the variables and serves; it ends once every
          worker has put its index into a done queue that lives on the ps (a FIFOQueue the
          workers' graphs name by the same shared_name), then prints the global step.
  worker  a `tf.train.Server` of its own and a graph of its own: a tfhp `Topology` for its
          task, a `ParameterServer` placement (variables on the ps) inside an `AsyncReplicas`
          update (it applies its own gradients, measuring their staleness), the step from
          `tfhp.runner.step.build_train_step`, and a `tfhp.cluster.task_session.TaskSession`
          (worker 0 initialises, the others wait for it, bounded). It trains --steps steps, tells the
          ps it is done and exits.

Every wait is bounded by --timeout_s (RunOptions timeouts, the session's start bound), and the
whole task by twice that (`exit_after`), so a task ends by itself even when a peer never comes. Started by hand, across machines too:

  python examples/between_graph_task.py --job_name=ps --task_index=0 \
      --ps_hosts=HOST:PORT --worker_hosts=HOST:PORT,HOST:PORT
  python examples/between_graph_task.py --job_name=worker --task_index=0 <the same hosts>
  python examples/between_graph_task.py --job_name=worker --task_index=1 <the same hosts>

See docs/guide.md for a walk through the code.
"""
import argparse
import os
import sys
import threading

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

from tfhp import compat
from tfhp.runner import step as step_lib
from tfhp import topology as topology_lib
from tfhp.cluster import task_session
from tfhp.pipelines import constant
from tfhp.replication import async_replicas
from tfhp.replication import parameter_server

NUM_FEATURES = 8
NUM_CLASSES = 4
DONE_QUEUE = 'example_done'  # the shared name that ties the workers' enqueues to the ps's queue


def done_queue():
    """The ps's done queue; every graph that builds it with this name, device and dtype gets
    the same queue (it lives in the ps task's process)."""
    with tf.device('/job:ps/task:0/cpu:0'):
        return tf.FIFOQueue(-1, [tf.int32], shapes=[[]], shared_name=DONE_QUEUE,
                            name=DONE_QUEUE)


def exit_after(seconds):
    """The last bound: ends this process (status 3) if it still runs after `seconds`, whatever
    it waits on (making a session to a peer that never started waits without a bound)."""
    def end():
        print('still running after %g s: ending' % seconds, flush=True)
        os._exit(3)  # pylint: disable=protected-access
    timer = threading.Timer(seconds, end)
    timer.daemon = True
    timer.start()


def run_ps(cluster, args):
    server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name='ps', task_index=0,
                             config=tf.ConfigProto(device_count={'CPU': 1}))
    with tf.Graph().as_default() as graph:
        take = done_queue().dequeue()
        with tf.device('/job:ps/task:0/cpu:0'):
            # The same name and device as the workers' global_step: the same variable.
            global_step = tf.train.get_or_create_global_step()
    options = tf.RunOptions(timeout_in_ms=int(args.timeout_s * 1000))
    config = tf.ConfigProto(device_filters=['/job:ps/task:0'])  # talk to no other task
    with tf.Session(server.target, graph=graph, config=config) as sess:
        print('serving at %s' % cluster['ps'][0], flush=True)
        for _ in cluster['worker']:
            try:
                print('worker %d is done' % sess.run(take, options=options), flush=True)
            except tf.errors.DeadlineExceededError:
                print('a worker did not finish within %g s; giving up' % args.timeout_s)
                return 1
        print('every worker is done; global_step %d' % sess.run(global_step), flush=True)
    return 0


def worker_data(task_index, batch_size):
    """A learnable problem: labels from a fixed linear map (the same on every worker) of
    features drawn per worker, so the workers train one model on different data."""
    true_weights = np.random.default_rng(0).normal(size=[NUM_FEATURES, NUM_CLASSES])
    features = np.random.default_rng(1 + task_index).normal(
        size=[batch_size, NUM_FEATURES]).astype(np.float32)
    labels = np.argmax(features @ true_weights, axis=1).astype(np.int32)
    return features, labels


def model_fn(images, labels):
    weights = tf.get_variable('weights', [NUM_FEATURES, NUM_CLASSES],
                              initializer=tf.zeros_initializer())
    logits = tf.matmul(images, weights)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    return loss, logits


def run_worker(cluster, args):
    task = args.task_index
    server = tf.train.Server(tf.train.ClusterSpec(cluster), job_name='worker', task_index=task,
                             config=tf.ConfigProto(device_count={'CPU': 1}))
    topology = topology_lib.Topology.between_graph(cluster, task)
    with tf.Graph().as_default():
        with tf.device(topology.variable_devices[0]):
            global_step = tf.train.get_or_create_global_step()  # before the towers (AsyncReplicas)
        placement = parameter_server.ParameterServer(
            topology.tower_devices, topology.variable_devices,
            caching_device=topology.input_device)
        manager = async_replicas.AsyncReplicas(placement, topology.input_device)
        step_ops = step_lib.build_train_step(
            constant.ConstantPipeline(*worker_data(task, args.batch_size)), model_fn, manager,
            lambda: tf.train.GradientDescentOptimizer(0.5), topology)
        counters = manager.counters()
        signal_done = done_queue().enqueue(tf.constant(task, tf.int32))
        devices = set(tf.DeviceSpec.from_string(v.device).to_string()
                      for v in tf.trainable_variables() + [global_step])
        print('variables on %s' % ', '.join(sorted(devices)), flush=True)
        # Worker 0 initialises the variables on the ps; the others wait for it (bounded).
        config = task_session.session_config(tf.ConfigProto(), ['/job:ps', '/job:worker/task:%d'
                                                            % task])
        sess = task_session.TaskSession(server.target, config, saver=None,
                                    initialise=topology.is_chief, checkpoint_dir=None,
                                    hooks=step_ops.hooks, timeout_s=args.timeout_s)
        options = tf.RunOptions(timeout_in_ms=int(args.timeout_s * 1000))
        sess.run(step_ops.post_init_ops, options=options)
        for i in range(1, args.steps + 1):
            _, loss = sess.run([step_ops.train_op, step_ops.loss], options=options)
            print('step %d: loss %.4f, global_step now %d'
                  % (i, loss, sess.run(global_step, options=options)), flush=True)
        counts = sess.run(counters, options=options)  # measured where each update applied
        print('done: %d steps; staleness of my updates: mean %.2f, max %d'
              % (args.steps, counts['staleness_sum'] / max(1, counts['staleness_count']),
                 counts['staleness_max']), flush=True)
        sess.run(signal_done, options=options)
    # No sess.close(): closing a session whose ps has already exited can wait on it (TF 2.21);
    # the process ends here and its sessions with it.
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--job_name', choices=['ps', 'worker'], required=True)
    parser.add_argument('--task_index', type=int, default=0)
    parser.add_argument('--ps_hosts', required=True, help='host:port of the one ps task')
    parser.add_argument('--worker_hosts', required=True, help='comma-separated host:port')
    parser.add_argument('--steps', type=int, default=5)
    parser.add_argument('--batch_size', type=int, default=16, help='per worker')
    parser.add_argument('--timeout_s', type=float, default=60.0,
                        help='bound on every wait of this task')
    args = parser.parse_args()
    exit_after(2 * args.timeout_s)
    compat.enable_graph_mode()
    cluster = {'ps': args.ps_hosts.split(','), 'worker': args.worker_hosts.split(',')}
    return run_ps(cluster, args) if args.job_name == 'ps' else run_worker(cluster, args)


if __name__ == '__main__':
    sys.exit(main())

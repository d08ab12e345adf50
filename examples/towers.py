"""Towers over a variable manager: replicated copies on virtual CPU devices, kept equal.

One graph builds a tower (a model copy) per virtual CPU device. A `Replicated` manager gives
every tower its own copy of the variables and all-reduces the gradients, so every copy takes
the same update. The example shows the three facts a hand-built replicated step rests on:

  1. the copies start different (each is initialised on its own) until the manager's
     `post_init_ops` copy tower 0's values to the others; a step run before that fails;
  2. after them, the copies stay equal step after step (every all-reduce gives every tower the
     same sum);
  3. N towers with batch b train exactly like one tower with batch N*b (gradients are
     meaned over towers, by contract), checked against a one-tower run on the same data.

  python examples/towers.py --num_towers=2 --all_reduce_spec=xring --steps=3

See docs/guide.md for a walk through the code.
"""
import argparse
import re

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

import numpy as np  # pylint: disable=g-import-not-at-top,wrong-import-position
import tensorflow.compat.v1 as tf

from tfhp import compat
from tfhp import config as config_lib
from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step as step_lib
from tfhp import topology as topology_lib
from tfhp.pipelines import constant

NUM_FEATURES = 8
NUM_CLASSES = 10


def model_fn(images, labels):
    """A one-layer softmax classifier: (loss, logits). Variables come from get_variable, so
    the manager's tower scope decides where they live and whose copy they are."""
    weights = tf.get_variable('weights', [NUM_FEATURES, NUM_CLASSES],
                              initializer=tf.glorot_uniform_initializer())
    biases = tf.get_variable('biases', [NUM_CLASSES], initializer=tf.zeros_initializer())
    logits = tf.matmul(images, weights) + biases
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
        labels=labels, logits=logits))
    return loss, logits


def build(num_towers, all_reduce_spec, features, labels):
    """The graph of a replicated step over `num_towers` virtual CPU devices."""
    graph = tf.Graph()
    with graph.as_default():
        topology = topology_lib.Topology.local(device='cpu', num_towers=num_towers)
        manager = replication.make_variable_manager(
            config_lib.ReplicationConfig(variable_update='replicated',
                                         all_reduce_spec=all_reduce_spec), topology)
        step_ops = step_lib.build_train_step(
            constant.ConstantPipeline(features, labels), model_fn, manager,
            lambda: tf.train.GradientDescentOptimizer(0.5), topology)
        copies = [manager.trainable_variables(t) for t in range(num_towers)]
        init = tf.global_variables_initializer()
    return graph, step_ops, copies, init


def spread(sess, copies):
    """The largest difference between any tower's copy of a variable and tower 0's."""
    values = sess.run(copies)
    return max(float(np.max(np.abs(np.asarray(mine) - np.asarray(first))))
               for tower in values[1:] for mine, first in zip(tower, values[0]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--num_towers', type=int, default=2)
    parser.add_argument('--all_reduce_spec', default='xring',
                        help="tf_cnn_benchmarks' syntax: pscpu, psgpu, xring, xring#2, "
                        "collective, pscpu:32k:xring ... (nccl needs GPUs)")
    parser.add_argument('--batch_size', type=int, default=4, help='per tower')
    parser.add_argument('--steps', type=int, default=3)
    args = parser.parse_args()
    compat.enable_graph_mode()

    rng = np.random.default_rng(0)
    features = rng.normal(size=[args.num_towers * args.batch_size, NUM_FEATURES]).astype(
        np.float32)
    labels = rng.integers(0, NUM_CLASSES, size=len(features)).astype(np.int32)

    graph, step_ops, copies, init = build(args.num_towers, args.all_reduce_spec, features,
                                          labels)
    names = [v.op.name for v in copies[1]]
    print('tower 1 reads its own copies: %s' % ', '.join(names))
    proto = session_lib.config_proto(num_cpu_devices=args.num_towers)
    with tf.Session(graph=graph, config=proto) as sess:
        sess.run(init)
        print('after init: copies differ by %.4f' % spread(sess, copies))
        try:
            sess.run(step_ops.train_op)
        except tf.errors.InvalidArgumentError as e:
            reason = re.search(r'assertion failed: \[(.*?)\]', e.message)
            print('a step before post_init_ops fails: %s' % (reason.group(1) if reason else
                                                               e.message.split('\n')[0]))
        sess.run(step_ops.post_init_ops)
        print('after post_init_ops: copies differ by %.4f' % spread(sess, copies))
        initial = sess.run(copies[0])  # where the one-tower reference below starts
        for i in range(1, args.steps + 1):
            _, loss = sess.run([step_ops.train_op, step_ops.loss])
            print('step %d: loss %.6f, global_step %d, copies differ by %g'
                  % (i, loss, sess.run(step_ops.global_step), spread(sess, copies)))
        trained = sess.run(copies[0])

    # The reference: one tower, the whole batch, started from tower 0's initial values.
    ref_graph, ref_ops, ref_copies, ref_init = build(1, '', features, labels)
    with tf.Session(graph=ref_graph, config=session_lib.config_proto(num_cpu_devices=1)) as sess:
        sess.run(ref_init)
        for variable, value in zip(ref_copies[0], initial):
            variable.load(value, sess)
        for _ in range(args.steps):
            sess.run(ref_ops.train_op)
        reference = sess.run(ref_copies[0])
    diff = max(float(np.max(np.abs(a - b))) for a, b in zip(trained, reference))
    print('%d towers x batch %d vs 1 tower x batch %d after %d steps: max difference %.2e'
          % (args.num_towers, args.batch_size, args.num_towers * args.batch_size, args.steps,
             diff))


if __name__ == '__main__':
    main()

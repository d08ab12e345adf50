"""Model parallelism vs data parallelism on the same devices, with the same network and data.

Three ways to train one wide MLP on a fixed global batch with SGD:
  single:  the whole network and batch on one device;
  model:   every layer split into vertical slices, one per device (activations all-gathered);
  data:    one full copy per device on batch/N, gradients meaned on a parameter server.
All three compute the same updates (the script checks the losses agree), so the step time is
the only difference. Prints a table and one JSON line per mode (and appends to --result_file).

  python -m experiments.model_parallel                   # 2 virtual CPU devices, small MLP
  python -m experiments.model_parallel --num_devices=4 --width=8192 --device=gpu
"""
import time

from absl import app
from absl import flags
import numpy as np
import tensorflow.compat.v1 as tf

from experiments import common
from tfhp import compat
from tfhp import replication
from tfhp import session as session_lib
from tfhp import step
from tfhp import topology as topology_lib
from tfhp.config import ReplicationConfig
from tfhp.models import sliced_mlp
from tfhp.pipelines import constant

FLAGS = flags.FLAGS


def _define_flags():
    # Defined only when run as a script, so tests can import train() beside tfhp.cli's flags.
    flags.DEFINE_integer('num_devices', 2, 'Devices (virtual CPU devices on a CPU).')
    flags.DEFINE_enum('device', 'cpu', ['cpu', 'gpu'], 'Device kind.')
    flags.DEFINE_integer('width', 2048, 'Units of each hidden layer.')
    flags.DEFINE_integer('depth', 3, 'Hidden layers.')
    flags.DEFINE_integer('batch_size', 64, 'Global batch size.')
    flags.DEFINE_integer('input_size', 1024, 'Input features.')
    flags.DEFINE_integer('num_steps', 20, 'Timed steps per mode.')
    flags.DEFINE_string('result_file', None, 'Append JSON lines here.')


def train(mode, num_devices, device_kind, width, depth, batch, input_size, num_steps):
    """Trains one mode; returns its losses per step and its timing."""
    rng = np.random.RandomState(0)
    images = rng.normal(size=[batch, input_size]).astype(np.float32)
    labels = rng.randint(0, 10, size=[batch]).astype(np.int32)
    weights = sliced_mlp.initial_weights(input_size, [width] * depth, 10)
    devices = tuple('/%s:%d' % (device_kind, i) for i in range(num_devices))
    towers = devices if mode == 'data' else devices[:1]
    slices = devices if mode == 'model' else devices[:1]
    topology = topology_lib.Topology(tower_devices=towers, variable_devices=(devices[0],))

    def model_fn(x, y):
        logits = sliced_mlp.build(x, weights, slices)
        return tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
            labels=y, logits=logits)), logits

    with tf.Graph().as_default() as graph:
        manager = replication.make_variable_manager(ReplicationConfig(), topology)
        ops = step.build_train_step(constant.ConstantPipeline(images, labels), model_fn,
                                    manager, lambda: tf.train.GradientDescentOptimizer(0.01),
                                    topology)
        init = tf.global_variables_initializer()
    config = session_lib.config_proto(num_cpu_devices=num_devices if device_kind == 'cpu'
                                      else 1)
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        losses = [sess.run([ops.loss, ops.train_op])[0] for _ in range(3)]
        times = session_lib.run_steps(sess, ops.train_op, num_steps, batch)
    return losses, times


def main(_):
    compat.enable_graph_mode()
    results = {}
    for mode in ('single', 'model', 'data'):
        start = time.perf_counter()
        losses, times = train(mode, FLAGS.num_devices, FLAGS.device, FLAGS.width, FLAGS.depth,
                              FLAGS.batch_size, FLAGS.input_size, FLAGS.num_steps)
        results[mode] = dict(times.summary(), study='model_parallel', mode=mode,
                             losses=[float(l) for l in losses], num_devices=FLAGS.num_devices,
                             width=FLAGS.width, depth=FLAGS.depth, batch_size=FLAGS.batch_size,
                             build_and_run_s=time.perf_counter() - start)
    reference = np.array(results['single']['losses'])
    print('%-8s %12s %14s %16s' % ('mode', 'step ms p50', 'images/sec', 'max |loss diff|'))
    for mode, r in results.items():
        r['max_loss_diff_vs_single'] = float(np.max(np.abs(np.array(r['losses']) - reference)))
        print('%-8s %12.2f %14.1f %16.2e' % (mode, r['step_time_ms']['p50'],
                                              r['images_per_sec'],
                                              r['max_loss_diff_vs_single']))
    common.write_records(list(results.values()), FLAGS.result_file)


if __name__ == '__main__':
    _define_flags()
    app.run(main)

"""Model parallelism vs data parallelism on the same devices, with the same network and data.

Three ways to train one wide MLP on a fixed global batch with SGD:
  single:  the whole network and batch on one device;
  model:   every layer split into vertical slices, one per device (activations all-gathered);
  data:    one full copy per device on batch/N, gradients meaned on a parameter server.
All three compute the same updates (the script checks the losses agree), so the step time is
the only difference. Each mode runs --repeats times (seeds --seed + r: the data and
the initial weights), in rounds; figures are median [min-max] over the repeats, '*' marking a
range apart from `single`'s (experiments/stats.py). Prints a table and one JSON line per mode
(and appends to --result_file).

  python -m experiments.model_parallel                   # 2 virtual CPU devices, small MLP
  python -m experiments.model_parallel --num_devices=4 --width=8192 --device=gpu
"""
import functools
import time

from absl import flags
import numpy as np
import tensorflow.compat.v1 as tf

from experiments import common
from experiments import frame
from experiments import stats
from tfhp import compat
from tfhp import replication
from tfhp import session as session_lib
from tfhp.runner import step
from tfhp import topology as topology_lib
from tfhp.config import ReplicationConfig
from tfhp.models import sliced_mlp
from tfhp.pipelines import constant

FLAGS = flags.FLAGS


def _define_flags():
    # Defined only when run as a script, so tests can import train() beside tfhp.cli's flags;
    # the common ones are the frame's.
    flags.DEFINE_integer('num_devices', 2, 'Devices (virtual CPU devices on a CPU).')
    flags.DEFINE_enum('device', 'cpu', ['cpu', 'gpu'], 'Device kind.')
    flags.DEFINE_integer('width', 2048, 'Units of each hidden layer.')
    flags.DEFINE_integer('depth', 3, 'Hidden layers.')
    flags.DEFINE_integer('batch_size', 64, 'Global batch size.')
    flags.DEFINE_integer('input_size', 1024, 'Input features.')


def train(mode, num_devices, device_kind, width, depth, batch, input_size, num_steps, seed=0):
    """Trains one mode; returns its losses per step and its timing."""
    rng = np.random.RandomState(seed)
    images = rng.normal(size=[batch, input_size]).astype(np.float32)
    labels = rng.randint(0, 10, size=[batch]).astype(np.int32)
    weights = sliced_mlp.initial_weights(input_size, [width] * depth, 10, seed=seed)
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


def measure(mode, network, seed):
    """One run of a mode; its JSON record.

    Args:
      mode: 'single', 'model' or 'data'.
      network: train()'s arguments after the mode and before the seed, as a dict.
      seed: the data's and the initial weights' seed.
    """
    start = time.perf_counter()
    losses, times = train(mode, seed=seed, **network)
    return dict(network, study='model_parallel', mode=mode, seed=seed,
                losses=[float(l) for l in losses], images_per_sec=times.images_per_sec,
                step_time_ms_p50=times.step_time_ms()['p50'],
                build_and_run_s=time.perf_counter() - start)


MODES = ('single', 'model', 'data')
FIGURES = ('images_per_sec', 'step_time_ms_p50', 'max_loss_diff_vs_single', 'build_and_run_s')
TABLE = [('mode', 'mode', None), ('step ms p50', 'step_time_ms_p50', '%.2f'),
         ('images/s', 'images_per_sec', '%.1f'),
         ('max |loss diff|', 'max_loss_diff_vs_single', '%.1e')]


def run(network, repeats, base_seed):
    """Every mode repeats times, in rounds; one record of summaries each, marked vs single."""
    seeds, runs = common.run_in_rounds([functools.partial(measure, mode, network)
                                        for mode in MODES], repeats, base_seed)
    for mode_runs in runs:  # each repeat against the single-device run of the same seed
        for one, single in zip(mode_runs, runs[0]):
            one['max_loss_diff_vs_single'] = float(np.max(np.abs(
                np.array(one['losses']) - np.array(single['losses']))))
    records = [stats.combine(mode_runs, FIGURES, seeds) for mode_runs in runs]
    return stats.mark(records, records[0], FIGURES[:2])


def study():
    """Every mode --repeats times, reported."""
    compat.enable_graph_mode()
    network = dict(num_devices=FLAGS.num_devices, device_kind=FLAGS.device, width=FLAGS.width,
                   depth=FLAGS.depth, batch=FLAGS.batch_size, input_size=FLAGS.input_size,
                   num_steps=FLAGS.steps)
    frame.report(run(network, FLAGS.repeats, FLAGS.seed), TABLE, 'single')


if __name__ == '__main__':
    _define_flags()
    frame.main(study, steps=20)

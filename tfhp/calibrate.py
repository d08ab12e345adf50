"""`python -m tfhp.calibrate --model=M --output=M.json`: a compute profile for emulated compute.

Runs the model alone in this process (one tower, synthetic data), times --steps untraced steps,
traces one more, and writes a `tfhp.emulation.profile.ComputeProfile`: the model's variables
layer by layer, and each layer's forward and backward seconds. The layers' times are their ops'
traced times, scaled so that they add up to the untraced step's share of forward and backward
time (`profile.from_op_times`). With --device_images_per_sec the times are scaled instead to a
device's published throughput (e.g. a K80's 52 images/sec on ResNet-50), the layers keeping the
proportions measured here.

  python -m tfhp.calibrate --model=resnet20 --data_name=cifar10 --batch_size=32 \\
      --output=resnet20.json
  python -m tfhp --emulated_compute=resnet20.json --model=resnet20 --data_name=cifar10 ...

Prints one JSON line: the profile's model, batch, compute seconds, images/sec and bytes.
"""
import dataclasses
import json
import statistics
import sys
import time

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import app  # pylint: disable=g-import-not-at-top,wrong-import-position
from absl import flags
import tensorflow.compat.v1 as tf

from tfhp import benchmark
from tfhp import compat
from tfhp import config as config_lib
from tfhp import session as session_lib
from tfhp import tower
from tfhp.emulation import profile as profile_lib
from tfhp.ops import scopes

FLAGS = flags.FLAGS


def _define_flags():
    """The command's flags, defined only when it runs (tests import this module beside
    tfhp.cli, whose flags share names with these)."""
    flags.DEFINE_string('model', 'trivial', 'Model to profile (docs/training.md lists them).')
    flags.DEFINE_integer('batch_size', None, 'Images per tower; default: the model\'s.')
    flags.DEFINE_integer('image_size', None, 'Square image size; default: the model\'s.')
    flags.DEFINE_string('data_name', None, 'cifar10 for the CIFAR-10 models.')
    flags.DEFINE_integer('num_classes', 1000, 'Classes of the synthetic data.')
    flags.DEFINE_enum('data_format', 'NHWC', config_lib.DATA_FORMATS, 'Layout of the profiled run.')
    flags.DEFINE_integer('steps', 10, 'Untraced steps timed (their median is the step time).')
    flags.DEFINE_integer('warmup_steps', 3, 'Steps run first, untimed.')
    flags.DEFINE_string('output', None, 'Where to write the profile (JSON).')
    flags.DEFINE_float('device_images_per_sec', None, 'Scale the times to this published '
                       'single-device throughput (images/sec at this batch).')
    flags.DEFINE_string('device_name', '', 'The device of --device_images_per_sec, for the record.')


def model_variables(spec, cfg, batch_size, image_size, num_classes):
    """The model's `profile.Variable`s in creation order, built alone in a scratch graph."""
    with tf.Graph().as_default():
        shape = ([batch_size, image_size, image_size, 3] if cfg.model.data_format == 'NHWC' else
                 [batch_size, 3, image_size, image_size])
        model_fn = tower.make_model_fn(spec, num_classes, cfg.model.data_format,
                                       cfg.model.fuse_batchnorm,
                                       slice_bytes=cfg.model.layer_slice_bytes)
        model_fn(tf.zeros(shape), tf.zeros([batch_size], tf.int32))
        trainable = {v.op.name for v in tf.trainable_variables()}
        return [profile_lib.Variable(v.op.name, tuple(v.shape.as_list()),
                                     v.dtype.base_dtype.name, v.op.name in trainable)
                for v in tf.global_variables()]


def calibrate(cfg, steps, warmup_steps):
    """The ComputeProfile of cfg's model, from a run of it alone in this process."""
    built = benchmark.build(cfg)
    with tf.Session(graph=built.graph, config=built.session_config) as sess:
        sess.run(built.init)
        sess.run(built.post_init_ops)
        for _ in range(warmup_steps):
            sess.run(built.ops.train_op)
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            sess.run(built.ops.train_op)
            times.append(time.perf_counter() - start)
        _, metadata = session_lib.run_traced(sess, built.ops.train_op)
    op_seconds = {}
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            op_seconds[node.node_name] = (op_seconds.get(node.node_name, 0.0) +
                                          node.all_end_rel_micros / 1e6)
    total = sum(op_seconds.values())
    towers = sum(s for name, s in op_seconds.items() if '/forward/' in name or
                 '/backward/' in name)
    update = sum(s for name, s in op_seconds.items() if name.startswith(scopes.APPLY + '/'))
    step_s = statistics.median(times)
    spec = benchmark.model_spec(cfg)
    variables = model_variables(spec, cfg, built.batch_size, built.image_size,
                                cfg.model.num_classes)
    return profile_lib.from_op_times(
        cfg.model.name, built.batch_size, variables, op_seconds, step_s * towers / total,
        'traced on this machine: median of %d steps %.4f s, forward+backward %.1f%% and '
        'update %.1f%% of op time' % (steps, step_s, 100.0 * towers / total,
                                       100.0 * update / total),
        apply_s=step_s * update / total)


def main(argv):
    del argv
    if not FLAGS.output:
        print('tfhp.calibrate: error: --output is required', file=sys.stderr)
        return 2
    try:
        cfg = config_lib.BenchmarkConfig(
            model=config_lib.ModelConfig(name=FLAGS.model, batch_size=FLAGS.batch_size,
                                         image_size=FLAGS.image_size,
                                         num_classes=FLAGS.num_classes,
                                         data_format=FLAGS.data_format),
            data=config_lib.DataConfig(data_name=FLAGS.data_name),
            run=config_lib.RunConfig(num_batches=FLAGS.steps,
                                     num_warmup_batches=FLAGS.warmup_steps))
        compat.enable_graph_mode()
        profile = calibrate(cfg, FLAGS.steps, FLAGS.warmup_steps)
    except config_lib.ConfigError as e:
        print('tfhp.calibrate: error: %s' % e, file=sys.stderr)
        return 2
    profile = dataclasses.replace(profile, data_name=FLAGS.data_name)
    if FLAGS.device_images_per_sec:
        profile = profile.scaled(profile.batch_size / FLAGS.device_images_per_sec,
                                 '%s: %g images/sec (published), layers as measured here'
                                 % (FLAGS.device_name or 'device', FLAGS.device_images_per_sec))
    profile.save(FLAGS.output)
    print(json.dumps({'model': profile.model, 'batch_size': profile.batch_size,
                      'compute_s': profile.compute_s, 'images_per_sec': profile.images_per_sec,
                      'layers': len(profile.layers), 'gradient_bytes': profile.gradient_bytes,
                      'source': profile.source}))
    return 0


def run_main():
    """Console-script entry point."""
    _define_flags()
    app.run(lambda argv: sys.exit(main(argv)))


if __name__ == '__main__':
    run_main()

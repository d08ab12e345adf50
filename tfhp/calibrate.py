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
import sys

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import app  # pylint: disable=g-import-not-at-top,wrong-import-position
from absl import flags

from tfhp import config as config_lib
from tfhp import flag_help

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
        # TensorFlow is imported only for a run (--help imports none of it).
        from tfhp.runner import calibration  # pylint: disable=g-import-not-at-top
        from tfhp import compat  # pylint: disable=g-import-not-at-top
        compat.enable_graph_mode()
        profile = calibration.calibrate(cfg, FLAGS.steps, FLAGS.warmup_steps)
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
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=lambda argv: flag_help.parse(
        argv, __doc__, [('flags', FLAGS.get_flags_for_module(__name__))]))


if __name__ == '__main__':
    run_main()

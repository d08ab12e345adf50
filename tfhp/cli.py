"""The `tfhp` command: absl flags -> BenchmarkConfig -> tfhp.benchmark.run.

Flags are read here and nowhere else. Where tf_cnn_benchmarks has a flag for the same thing,
the name and meaning are the same, so its command lines re-run here. A configuration that cannot
work exits with status 2 and one line naming the flag, before any graph is built.
"""
import os
import sys

# Quiet TensorFlow's C++ start-up chatter unless the user asked for it.
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from tfhp import config as config_lib

FLAGS = flags.FLAGS

# Model.
flags.DEFINE_string('model', 'trivial', 'Model name (see README for the list).')
flags.DEFINE_integer('batch_size', None, 'Batch size per device; default: the model\'s.')
flags.DEFINE_integer('image_size', None, 'Square input image size; default: the model\'s.')
flags.DEFINE_integer('num_classes', 1000, 'Number of classes of the synthetic data.')
flags.DEFINE_enum('data_format', 'NHWC', config_lib.DATA_FORMATS, 'Image layout.')
flags.DEFINE_boolean('fuse_batchnorm', True,
                     'Fused batch-norm kernel (true) or composite ops (false).')
# Optimizer.
flags.DEFINE_enum('optimizer', 'sgd', config_lib.OPTIMIZERS, 'Optimizer.')
flags.DEFINE_float('learning_rate', None, 'Base learning rate; default: the model\'s.')
flags.DEFINE_float('momentum', 0.9, 'Momentum for momentum and rmsprop.')
flags.DEFINE_float('rmsprop_decay', 0.9, 'RMSProp decay.')
flags.DEFINE_float('rmsprop_epsilon', 1.0, 'RMSProp epsilon.')
flags.DEFINE_float('adam_beta1', 0.9, 'Adam beta1.')
flags.DEFINE_float('adam_beta2', 0.999, 'Adam beta2.')
flags.DEFINE_float('adam_epsilon', 1e-8, 'Adam epsilon.')
flags.DEFINE_float('weight_decay', 4e-5, 'L2 weight decay (weights only).')
flags.DEFINE_float('gradient_clip', None, 'Clip each gradient to [-clip, clip].')
flags.DEFINE_string('piecewise_learning_rate_schedule', '',
                    '"r0;e1;r1;e2;r2": rate r0 until epoch e1, then r1, ...')
flags.DEFINE_float('num_learning_rate_warmup_epochs', 0.0,
                   'Linear learning-rate warm-up from 0 over this many epochs.')
flags.DEFINE_integer('learning_rate_base_batch_size', 0,
                     'If > 0, linear scaling rule: rate *= global batch / this.')
# Devices.
flags.DEFINE_enum('device', 'cpu', config_lib.DEVICES, 'Device kind of the towers.')
flags.DEFINE_integer('num_devices', 1, 'Towers in this process (virtual devices on CPU).')
flags.DEFINE_enum('local_parameter_device', 'cpu', config_lib.DEVICES,
                  'Where parameter-server variables live in this process.')
flags.DEFINE_integer('num_intra_threads', 0, 'Intra-op thread pool size (0: TF decides).')
flags.DEFINE_integer('num_inter_threads', 0, 'Inter-op thread pool size (0: TF decides).')
# Replication.
flags.DEFINE_enum('variable_update', 'parameter_server', config_lib.VARIABLE_UPDATES,
                  'How variables are placed and gradients aggregated.')
# Run.
flags.DEFINE_integer('num_batches', 100, 'Timed steps.')
flags.DEFINE_integer('num_warmup_batches', 10, 'Untimed steps before timing.')
flags.DEFINE_integer('display_every', 10, 'Print progress every this many steps.')
flags.DEFINE_integer('tf_random_seed', 1234, 'Seed of every random op.')
flags.DEFINE_string('train_dir', None, 'Checkpoint directory; a run resumes from it.')
flags.DEFINE_integer('save_model_steps', None, 'Also checkpoint every this many steps.')
flags.DEFINE_boolean('eval', False, 'Evaluate the checkpoint in --train_dir (top-1/top-5).')
flags.DEFINE_boolean('print_training_accuracy', False, 'Print training top-1/top-5.')
flags.DEFINE_string('result_file', None, 'Append one JSON line per run to this file.')


def config_from_flags(values):
    """Builds the BenchmarkConfig from parsed flag values (raises ConfigError if invalid)."""
    return config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(
            name=values.model, batch_size=values.batch_size, image_size=values.image_size,
            num_classes=values.num_classes, data_format=values.data_format,
            fuse_batchnorm=values.fuse_batchnorm),
        optimizer=config_lib.OptimizerConfig(
            optimizer=values.optimizer, learning_rate=values.learning_rate,
            momentum=values.momentum, rmsprop_decay=values.rmsprop_decay,
            rmsprop_epsilon=values.rmsprop_epsilon, adam_beta1=values.adam_beta1,
            adam_beta2=values.adam_beta2, adam_epsilon=values.adam_epsilon,
            weight_decay=values.weight_decay, gradient_clip=values.gradient_clip,
            piecewise_learning_rate_schedule=values.piecewise_learning_rate_schedule,
            num_learning_rate_warmup_epochs=values.num_learning_rate_warmup_epochs,
            learning_rate_base_batch_size=values.learning_rate_base_batch_size),
        device=config_lib.DeviceConfig(
            device=values.device, num_devices=values.num_devices,
            local_parameter_device=values.local_parameter_device,
            num_intra_threads=values.num_intra_threads,
            num_inter_threads=values.num_inter_threads),
        replication=config_lib.ReplicationConfig(variable_update=values.variable_update),
        run=config_lib.RunConfig(
            num_batches=values.num_batches, num_warmup_batches=values.num_warmup_batches,
            display_every=values.display_every, tf_random_seed=values.tf_random_seed,
            train_dir=values.train_dir, save_model_steps=values.save_model_steps,
            eval=values.eval, print_training_accuracy=values.print_training_accuracy,
            result_file=values.result_file))


def main(argv):
    """Runs the benchmark the flags describe; exit status 2 on a configuration error."""
    if len(argv) > 1:
        print('tfhp: error: unexpected arguments: %s' % ' '.join(argv[1:]), file=sys.stderr)
        return 2
    try:
        cfg = config_from_flags(FLAGS)
    except config_lib.ConfigError as e:
        print('tfhp: error: %s' % e, file=sys.stderr)
        return 2
    # TensorFlow is imported only once the flags are known to be valid.
    from tfhp import benchmark  # pylint: disable=g-import-not-at-top
    from tfhp import compat  # pylint: disable=g-import-not-at-top
    compat.enable_graph_mode()
    try:
        benchmark.run(cfg)
    except config_lib.ConfigError as e:
        print('tfhp: error: %s' % e, file=sys.stderr)
        return 2
    return 0


def run_main():
    """Console-script entry point."""
    app.run(lambda argv: sys.exit(main(argv)))

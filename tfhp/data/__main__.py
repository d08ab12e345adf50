"""`python -m tfhp.data <command>`: make, convert or check a TFRecord image data set.

Commands:
  synthetic  a learnable synthetic data set (--num_classes, --image_size, --train_examples...)
  folder     convert --input_dir (one sub-folder of JPEG/PNG images per class)
  cifar10    convert CIFAR-10's python or binary batches in --input_dir (PNG, labels 0..9)
  digits     scikit-learn's 8x8 digits, upscaled to --image_size (needs tfhp[digits])
  check      read every record of --data_dir and name each corrupt one

Examples:
  python -m tfhp.data synthetic --output_dir=/tmp/shapes --image_size=32
  python -m tfhp.data folder --input_dir=~/photos --output_dir=/tmp/photos_tfr
  python -m tfhp.data cifar10 --input_dir=~/cifar-10-batches-py --output_dir=/tmp/cifar10
  python -m tfhp.data check --data_dir=/tmp/shapes
"""
import sys

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

FLAGS = flags.FLAGS
COMMANDS = ('synthetic', 'folder', 'cifar10', 'digits', 'check')

flags.DEFINE_string('output_dir', None, 'Where the shards and dataset_info.json go.')
flags.DEFINE_string('input_dir', None, 'folder: one sub-folder of images per class; cifar10: '
                    'the data_batch_* and test_batch files (python or .bin).')
flags.DEFINE_string('validation_dir', None,
                    'folder: a second folder for validation (default: split --input_dir).')
flags.DEFINE_float('validation_fraction', None,
                   'folder, digits: share held out for validation (default 0.1, 0.2).')
flags.DEFINE_string('data_dir', None, 'check: the data set to read.')
flags.DEFINE_string('data_name', None, 'check: the expected data set name.')
flags.DEFINE_integer('num_classes', 10, 'synthetic: number of classes.')
flags.DEFINE_integer('image_size', 32, 'synthetic, digits: image height and width.')
flags.DEFINE_integer('train_examples', 10000, 'synthetic: training examples.')
flags.DEFINE_integer('validation_examples', 2000, 'synthetic: validation examples.')
flags.DEFINE_integer('train_shards', 8, 'Training shard files.')
flags.DEFINE_integer('validation_shards', 2, 'Validation shard files.')
flags.DEFINE_integer('num_threads', 2, 'Shards written at once.')
flags.DEFINE_integer('seed', 0, 'Seed of the data, the split and the order.')
flags.DEFINE_integer('max_problems', 20, 'check: stop after this many corrupt records.')


def _require(name):
    if not getattr(FLAGS, name):
        raise ValueError('--%s is required for this command' % name)


def _check():
    from tfhp.data import check  # pylint: disable=g-import-not-at-top
    from tfhp.data import info as info_lib  # pylint: disable=g-import-not-at-top
    from tfhp.ops import record_input  # pylint: disable=g-import-not-at-top
    from tfhp.pipelines import example_format  # pylint: disable=g-import-not-at-top
    _require('data_dir')
    info = info_lib.load(FLAGS.data_dir, FLAGS.data_name)
    bad = 0
    for subset in info_lib.SUBSETS:
        files = record_input.list_files(example_format.shard_pattern(FLAGS.data_dir, subset))
        count, problems = check.scan(files, info.num_classes, FLAGS.max_problems,
                                     info.image_format)
        for problem in problems:
            print(check.describe(problem))
        print('%s: %d records read in %d files, %d corrupt' % (subset, count, len(files),
                                                               len(problems)))
        bad += len(problems)
    return 1 if bad else 0


def _make(command):
    from tfhp.data import cifar10  # pylint: disable=g-import-not-at-top
    from tfhp.data import digits  # pylint: disable=g-import-not-at-top
    from tfhp.data import folder  # pylint: disable=g-import-not-at-top
    from tfhp.data import synthetic  # pylint: disable=g-import-not-at-top
    _require('output_dir')
    common = dict(train_shards=FLAGS.train_shards, validation_shards=FLAGS.validation_shards,
                  num_threads=FLAGS.num_threads, seed=FLAGS.seed)
    if command == 'synthetic':
        info = synthetic.generate(
            FLAGS.output_dir, num_classes=FLAGS.num_classes, image_size=FLAGS.image_size,
            train_examples=FLAGS.train_examples,
            validation_examples=FLAGS.validation_examples, **common)
    elif command == 'folder':
        _require('input_dir')
        fraction = 0.1 if FLAGS.validation_fraction is None else FLAGS.validation_fraction
        info = folder.convert(FLAGS.input_dir, FLAGS.output_dir, FLAGS.validation_dir,
                              fraction, **common)
    elif command == 'cifar10':
        _require('input_dir')
        info = cifar10.convert(FLAGS.input_dir, FLAGS.output_dir, FLAGS.train_shards,
                               FLAGS.validation_shards, FLAGS.num_threads)
    else:
        fraction = 0.2 if FLAGS.validation_fraction is None else FLAGS.validation_fraction
        info = digits.convert(FLAGS.output_dir, FLAGS.image_size, fraction, **common)
    print('%s: %d classes, %s examples -> %s' % (info.name, info.num_classes,
                                                 info.num_examples, FLAGS.output_dir))
    return 0


def main(argv):
    """Runs the command named by the first argument; exit status 2 on bad input."""
    if len(argv) != 2 or argv[1] not in COMMANDS:
        print('usage: python -m tfhp.data {%s} [--flags]' % ','.join(COMMANDS),
              file=sys.stderr)
        return 2
    from tfhp import compat  # pylint: disable=g-import-not-at-top
    compat.enable_graph_mode()
    try:
        return _check() if argv[1] == 'check' else _make(argv[1])
    except (ValueError, ImportError) as e:
        print('tfhp.data: error: %s' % e, file=sys.stderr)
        return 2


if __name__ == '__main__':
    app.run(lambda argv: sys.exit(main(argv)))

"""The CIFAR-10 converter on generated stand-ins of both distributions (python and binary)."""
import os
import pickle
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.data import fake_cifar
from tfhp.data import check
from tfhp.data import cifar10
from tfhp.data import codec as codec_lib
from tfhp.data import info as info_lib
from tfhp.pipelines import example_format

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _records(directory, subset):
    files = sorted(tf.io.gfile.glob(example_format.shard_pattern(directory, subset)))
    return files, [tf.train.Example.FromString(r) for f in files
                   for r in tf.io.tf_record_iterator(f)]


def _value(example, key):
    feature = example.features.feature[key]
    return (feature.int64_list.value or feature.bytes_list.value)[0]


def _assert_round_trip(source, output_dir):
    """Every record holds its batch image's exact pixels and label, in the batches' order."""
    expected = {'train': [source[n] for n in cifar10.TRAIN_BATCHES],
                'validation': [source[cifar10.TEST_BATCH]]}
    with codec_lib.JpegCodec() as codec:
        for subset, parts in expected.items():
            _, examples = _records(output_dir, subset)
            images = cifar10.to_images(np.concatenate([rows for rows, _ in parts]))
            labels = np.concatenate([labels for _, labels in parts])
            assert len(examples) == len(labels)
            for example, pixels, label in zip(examples, images, labels):
                encoded = _value(example, example_format.ENCODED)
                assert codec_lib.is_png(encoded)
                np.testing.assert_array_equal(codec.decode(encoded), pixels)
                assert _value(example, example_format.LABEL) == label
                assert _value(example, example_format.TEXT) == (
                    info_lib.CIFAR10_CLASSES[label].encode())
                assert _value(example, example_format.FORMAT) == b'PNG'
                assert _value(example, example_format.HEIGHT) == 32


@pytest.mark.parametrize('write', [fake_cifar.write_python, fake_cifar.write_binary])
def test_both_distributions_round_trip_pixels_and_labels(tmp_path, write):
    source = write(str(tmp_path / 'batches'))
    out = str(tmp_path / 'records')
    info = cifar10.convert(str(tmp_path / 'batches'), out, train_shards=3, validation_shards=1)
    assert info == info_lib.load(out, 'cifar10')
    assert (info.name, info.num_classes, info.image_size, info.image_format) == (
        'cifar10', 10, 32, 'PNG')
    assert info.num_examples == {'train': 5 * fake_cifar.PER_BATCH,
                                 'validation': fake_cifar.PER_BATCH}
    _assert_round_trip(source, out)
    files, _ = _records(out, 'train')
    assert len(files) == 3
    assert check.scan(files, 10, image_format='PNG') == (5 * fake_cifar.PER_BATCH, [])
    # The checker knows the data set's format: PNG bytes are not what a JPEG data set holds.
    _, problems = check.scan(files[:1], 10)
    assert problems[0].reason == 'image/encoded bytes are not a JPEG image'


def test_the_usual_sub_folder_is_found(tmp_path):
    fake_cifar.write_python(str(tmp_path / 'cifar-10-batches-py'))
    info = cifar10.convert(str(tmp_path), str(tmp_path / 'out'), 1, 1)
    assert info.num_examples['validation'] == fake_cifar.PER_BATCH


def test_bad_input_is_refused_with_its_file_named(tmp_path):
    with pytest.raises(ValueError, match='holds no CIFAR-10 batches: expected data_batch_1'):
        cifar10.convert(str(tmp_path), str(tmp_path / 'out'))
    fake_cifar.write_binary(str(tmp_path))
    with open(tmp_path / 'test_batch.bin', 'ab') as f:
        f.write(b'\x00')  # a truncated record
    with pytest.raises(ValueError, match='test_batch.bin: 12293 bytes is not a whole number'):
        cifar10.convert(str(tmp_path), str(tmp_path / 'out'))


def test_labels_outside_0_to_9_and_foreign_pickles_are_refused(tmp_path):
    fake_cifar.write_python(str(tmp_path))
    with open(tmp_path / 'data_batch_2', 'wb') as f:
        pickle.dump({b'data': np.zeros([1, 3072], np.uint8), b'labels': [10]}, f, protocol=2)
    with pytest.raises(ValueError, match='data_batch_2: label 10 is not a CIFAR-10 class'):
        cifar10.convert(str(tmp_path), str(tmp_path / 'out'))
    # Unpickling may call only numpy's array reconstruction, never what the file names.
    with open(tmp_path / 'data_batch_2', 'wb') as f:
        pickle.dump({b'data': os.getcwd}, f, protocol=2)
    with pytest.raises(ValueError, match='data_batch_2: not a CIFAR-10 python batch .*posix'):
        cifar10.convert(str(tmp_path), str(tmp_path / 'out'))


def test_command_line_converts_and_checks(tmp_path):
    fake_cifar.write_binary(str(tmp_path / 'in'))
    out = str(tmp_path / 'out')

    def run(*args):
        return subprocess.run([sys.executable, '-m', 'tfhp.data'] + list(args),
                              capture_output=True, text=True, timeout=120, cwd=ROOT)

    made = run('cifar10', '--input_dir=%s' % (tmp_path / 'in'), '--output_dir=' + out,
               '--train_shards=2', '--validation_shards=1')
    assert made.returncode == 0, made.stderr
    assert 'cifar10: 10 classes' in made.stdout
    checked = run('check', '--data_dir=' + out, '--data_name=cifar10')
    assert checked.returncode == 0, checked.stderr
    assert 'validation: 4 records read in 1 files, 0 corrupt' in checked.stdout

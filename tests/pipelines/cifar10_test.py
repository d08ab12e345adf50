"""CIFAR-10 input: its preprocessing (pad, crop, flip; none for eval), both pipelines on a
converted stand-in, synthetic CIFAR-10, the model variant the data set selects, and the
command line end to end."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tests.data import fake_cifar
from tfhp.runner import build
from tfhp.runner import resolve
from tfhp import config as config_lib
from tfhp import diagnose
from tfhp import topology as topology_lib
from tfhp.data import cifar10
from tfhp.pipelines import datasets
from tfhp.pipelines import example_format
from tfhp.pipelines import preprocessing
from tfhp.pipelines import records

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAD = preprocessing.CIFAR_PADDING


@pytest.fixture(name='cifar_dir', scope='module')
def _cifar_dir(tmp_path_factory):
    """The fake CIFAR-10 python batches converted to records: (directory, source batches)."""
    root = tmp_path_factory.mktemp('cifar')
    source = fake_cifar.write_python(str(root / 'batches'))
    cifar10.convert(str(root / 'batches'), str(root / 'records'), train_shards=2,
                    validation_shards=1)
    return str(root / 'records'), source


def _coordinates_image():
    """32x32 image whose pixel (y, x) is (y + 1, x + 1, 7): every pixel tells where it was,
    and the zero padding is told apart by its 0."""
    ys, xs = np.mgrid[0:32, 0:32]
    return np.stack([ys + 1, xs + 1, np.full_like(ys, 7)], axis=2).astype(np.uint8)


def _window_of(crop, padded):
    """(dy, dx, flipped) such that crop is padded's 32x32 window at (dy, dx), maybe mirrored."""
    matches = [(dy, dx, flipped) for dy in range(2 * PAD + 1) for dx in range(2 * PAD + 1)
               for flipped in (False, True)
               if np.array_equal(crop, (lambda w: w[:, ::-1] if flipped else w)(
                   padded[dy:dy + 32, dx:dx + 32]))]
    assert len(matches) == 1, matches
    return matches[0]


def _augmented_samples(seed, count=24):
    with tf.Graph().as_default():
        tf.set_random_seed(seed)
        out = preprocessing.cifar_train_image(tf.constant(_coordinates_image()), 32)
        assert out.shape.as_list() == [32, 32, 3] and out.dtype == tf.float32
        with tf.Session() as sess:
            return [np.round(sess.run(out) * 255.0).astype(np.uint8) for _ in range(count)]


def test_training_crop_is_a_shifted_window_of_the_padded_image_and_flips_some():
    padded = np.pad(_coordinates_image(), [[PAD, PAD], [PAD, PAD], [0, 0]])
    samples = _augmented_samples(seed=11)
    windows = [_window_of(crop, padded) for crop in samples]
    flips = sum(flipped for _, _, flipped in windows)
    assert 0 < flips < len(windows)  # some mirrored, some not
    assert len({(dy, dx) for dy, dx, _ in windows}) > 3  # the offset varies
    # A fixed seed gives the same crops and flips again.
    for a, b in zip(samples, _augmented_samples(seed=11)):
        np.testing.assert_array_equal(a, b)


def _serialized(pixels, label=3):
    with tf.Graph().as_default(), tf.Session() as sess:
        png = sess.run(tf.io.encode_png(pixels))
    return example_format.make_example(png, label, 32, 32,
                                       image_format=b'PNG').SerializeToString()


@pytest.mark.parametrize('train,distortions', [(False, True), (True, False)])
def test_eval_and_undistorted_images_are_the_stored_pixels_scaled(train, distortions):
    pixels = np.random.default_rng(0).integers(0, 256, [32, 32, 3], dtype=np.uint8)
    with tf.Graph().as_default():
        fn = preprocessing.example_fn(32, 10, train=train, distortions=distortions,
                                      data_format='NCHW', data_name='cifar10')
        image, label = fn(tf.constant(_serialized(pixels)))
        assert image.shape.as_list() == [3, 32, 32]
        with tf.Session() as sess:
            runs = [sess.run([image, label]) for _ in range(2)]
    expected = pixels.transpose(2, 0, 1) / 255.0 * 2.0 - 1.0
    for got, got_label in runs:
        np.testing.assert_allclose(got, expected, atol=1e-6)
        assert got_label == 3


def _first_batch(pipeline):
    topo = topology_lib.Topology.local('cpu', 1)
    with tf.Graph().as_default():
        inputs = pipeline.tower_batches(topo)
        with tf.Session() as sess:
            sess.run(inputs.warmup_ops)
            return sess.run(inputs.batches[0])


def _pipeline(kind, data_dir, train):
    pattern = example_format.shard_pattern(data_dir, 'train' if train else 'validation')
    common = dict(batch_size=4, image_size=32, num_classes=10, train=train, seed=3,
                  staged=False, data_name='cifar10', distortions=train)
    if kind == 'records':
        return records.RecordsPipeline(pattern, parallelism=1, buffer_size=4, **common)
    return datasets.DatasetPipeline(pattern, shuffle_buffer_size=4, **common)


@pytest.mark.parametrize('kind', ['records', 'datasets'])
def test_both_pipelines_use_the_cifar_preprocessing(cifar_dir, kind):
    data_dir, source = cifar_dir
    # Evaluation: the stored images themselves (the ImageNet path would crop and resize).
    images, labels = _first_batch(_pipeline(kind, data_dir, train=False))
    rows, expected_labels = source[cifar10.TEST_BATCH]
    stored = cifar10.to_images(rows) / 255.0 * 2.0 - 1.0
    assert images.shape == (4, 32, 32, 3)
    for image, label in zip(images, labels):
        index = [i for i in range(4) if np.allclose(image, stored[i], atol=1e-6)]
        assert len(index) == 1 and expected_labels[index[0]] == label
    # Training: 32x32 crops in [-1, 1], labels 0..9 as stored (no ImageNet-style offset).
    images, labels = _first_batch(_pipeline(kind, data_dir, train=True))
    assert images.shape == (4, 32, 32, 3) and -1.0 <= images.min() <= images.max() <= 1.0
    assert set(labels) <= set(range(10))


def test_cifar10_synthetic_stand_in_and_model_variants():
    # Without --data_dir, --data_name=cifar10 is synthetic CIFAR-10: 10 classes, 50,000 images.
    cfg = testing.small_config(model='alexnet', image_size=None, data={'data_name': 'cifar10'})
    info = resolve.data_set(cfg)
    assert (info.name, info.num_classes, info.num_examples['train']) == ('cifar10', 10, 50000)
    built = build.build(cfg)
    assert (built.image_size, built.model_name) == (32, 'alexnet')
    # Without it, the same name is the ImageNet net, and the CIFAR-only nets are refused.
    assert build.build(testing.replace(cfg, 'data', data_name=None)).image_size == 224
    with pytest.raises(config_lib.ConfigError,
                       match="'resnet20' is for cifar10 data.*--data_name=cifar10 selects"):
        build.build(testing.small_config(model='resnet20'))
    with pytest.raises(config_lib.ConfigError, match='--data_name=flowers needs --data_dir'):
        config_lib.DataConfig(data_name='flowers')


def test_a_cifar_data_directory_selects_the_cifar_variant(cifar_dir):
    # The data set's name comes from its dataset_info.json when --data_name is not given.
    cfg = testing.small_config(model='alexnet', image_size=None, batch_size=4,
                               data={'data_dir': cifar_dir[0], 'record_input_parallelism': 1,
                                     'record_input_buffer_size': 4})
    built = build.build(cfg)
    assert (built.image_size, built.num_params) == (32, 1756426)
    # The synthetic-data ablation of `tfhp.diagnose` stands in for CIFAR-10 too.
    synthetic = dict(diagnose.ablations(cfg))['synthetic data']
    assert (synthetic.data.data_dir, synthetic.data.data_name) == (None, 'cifar10')


def test_command_line_trains_resnet20_on_converted_cifar(cifar_dir):
    proc = subprocess.run(
        [sys.executable, '-m', 'tfhp', '--model=resnet20', '--data_name=cifar10',
         '--data_dir=' + cifar_dir[0], '--num_batches=3', '--num_warmup_batches=1',
         '--batch_size=8'], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert 'trainable parameters: 269722' in proc.stdout
    match = re.search(r'total images/sec: ([0-9.]+)', proc.stdout)
    assert match and float(match.group(1)) > 0

"""--distortions as tf_cnn_benchmarks means it: ImageNet-format training images are always
randomly cropped and flipped and --distortions adds colour distortion; CIFAR-10's pad, crop and
flip come with --distortions only. Evaluation images are never distorted."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.pipelines import shapes
from tfhp import config as config_lib
from tfhp.pipelines import preprocessing


def _outputs(data_name=None, runs=6, **kwargs):
    """The images one record becomes in `runs` runs of its preprocessing."""
    record = shapes.good_records(1)[0]
    with tf.Graph().as_default():
        tf.set_random_seed(3)
        image, _ = preprocessing.example_fn(16, 4, data_name=data_name, **kwargs)(
            tf.constant(record))
        with tf.Session() as sess:
            return [sess.run(image) for _ in range(runs)]


def _varies(images):
    return any(not np.array_equal(images[0], other) for other in images[1:])


def _channel_means(images):
    return [tuple(np.round(image.mean(axis=(0, 1)), 4)) for image in images]


@pytest.mark.parametrize('kwargs, random', [
    (dict(train=False, distortions=True), False),          # evaluation: never distorted
    (dict(crop_flip=False, distortions=False), False),     # the whole image, resized
    (dict(crop_flip=True, distortions=False), True),       # tf_cnn_benchmarks' training
    (dict(crop_flip=False, distortions=True), True),       # colour alone
])
def test_imagenet_format_training_images(kwargs, random):
    assert _varies(_outputs(**kwargs)) == random


def test_distortions_change_colour_and_crop_flip_does_not():
    # A crop or a flip moves pixels; colour distortion changes the colours themselves, so
    # only it changes the mean colour of an image whose every pixel is kept.
    whole = _outputs(crop_flip=False, distortions=False, runs=1)
    coloured = _outputs(crop_flip=False, distortions=True)
    assert all(means != _channel_means(whole)[0] for means in _channel_means(coloured))
    flipped_or_not = _outputs(crop_flip=True, distortions=False)
    assert _varies(flipped_or_not)


@pytest.mark.parametrize('distortions', [False, True])
def test_cifar10_crop_and_flip_come_with_distortions(distortions):
    assert _varies(_outputs('cifar10', distortions=distortions)) == distortions


def test_defaults_are_tf_cnn_benchmarks():
    data = config_lib.DataConfig()
    assert (data.distortions, data.random_crop_flip) == (False, True)

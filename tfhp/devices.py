"""Questions only the runtime can answer: which devices exist and what their kernels accept.

Used to refuse a configuration before any graph is built (a GPU asked for and absent, NCHW on
a build whose CPU kernels reject it).
"""
import functools

import tensorflow.compat.v1 as tf

from tfhp import config as config_lib


def num_gpus():
    """Number of GPUs TensorFlow can see."""
    return len(tf.config.list_physical_devices('GPU'))


@functools.lru_cache(maxsize=None)
def supports_nchw(device):
    """Whether convolution and pooling run in NCHW on `device` ('cpu' or 'gpu').

    Asked of the runtime rather than assumed: a tiny NCHW conv + max-pool is run in a
    throwaway graph, so a build whose kernels accept NCHW is not refused.
    """
    graph = tf.Graph()
    with graph.as_default(), tf.device('/%s:0' % device):
        x = tf.zeros([1, 1, 4, 4])
        y = tf.nn.conv2d(x, tf.zeros([1, 1, 1, 1]), [1, 1, 1, 1], 'SAME', data_format='NCHW')
        y = tf.nn.max_pool2d(y, [1, 1, 2, 2], [1, 1, 2, 2], 'VALID', data_format='NCHW')
    try:
        with tf.Session(graph=graph, config=tf.ConfigProto(allow_soft_placement=False)) as sess:
            sess.run(y)
    except (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError):
        return False
    return True


def check(device_config, model_config):
    """Raises ConfigError if the devices of this machine cannot run the configuration."""
    if device_config.device == 'gpu':
        found = num_gpus()
        if found < device_config.num_devices:
            raise config_lib.ConfigError(
                '--device=gpu --num_devices=%d but TensorFlow sees %d GPU(s); use --device=cpu'
                % (device_config.num_devices, found))
    if model_config.data_format == 'NCHW' and not supports_nchw(device_config.device):
        raise config_lib.ConfigError(
            '--data_format=NCHW: this TensorFlow build\'s %s kernels reject NCHW convolution '
            'or pooling; use --data_format=NHWC' % device_config.device.upper())

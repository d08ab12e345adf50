"""Synthetic input: random images and labels held in device-resident variables.

Built once at initialisation and read every step with no host-to-device copy, so a benchmark on
it measures compute alone (the ceiling any real input pipeline is judged against). The variables
are local (not checkpointed, not trained) and seeded, so two runs see the same data.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.pipelines import base


class SyntheticPipeline(base.Pipeline):
    """Fixed random batches, one per tower, on the tower's device.

    Args:
      batch_size: per-tower batch size.
      image_size: square image size.
      num_classes: labels are drawn uniformly from [0, num_classes).
      data_format: 'NHWC' or 'NCHW'.
      seed: seed of the random initialisers (each tower gets seed + t).
      dtype: image dtype.
      depth: image channels.
    """

    def __init__(self, batch_size, image_size, num_classes, data_format='NHWC', seed=1234,
                 dtype=tf.float32, depth=3):
        self._batch_size = batch_size
        self._image_size = image_size
        self._num_classes = num_classes
        self._data_format = data_format
        self._seed = seed
        self._dtype = dtype
        self._depth = depth

    def image_shape(self):
        """Shape of one tower's image batch."""
        size, depth = self._image_size, self._depth
        if self._data_format == 'NHWC':
            return [self._batch_size, size, size, depth]
        return [self._batch_size, depth, size, size]

    def tower_batches(self, topology):
        """See base class; the synthetic pipeline has no stages to warm up."""
        batches = []
        for t, device in enumerate(topology.tower_devices):
            with tf.device(device), tf.name_scope('%s/%s' % (scopes.tower(t), scopes.INPUT)):
                seed = self._seed + t
                images = tf.Variable(
                    tf.random.truncated_normal(self.image_shape(), dtype=self._dtype,
                                               stddev=1.0, seed=seed),
                    trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES],
                    name='synthetic_images')
                labels = tf.Variable(
                    tf.random.uniform([self._batch_size], 0, self._num_classes, tf.int32,
                                      seed=seed),
                    trainable=False, collections=[tf.GraphKeys.LOCAL_VARIABLES],
                    name='synthetic_labels')
                batches.append((tf.identity(images), tf.identity(labels)))
        return base.InputBatches(batches=batches, put_ops=[], warmup_ops=[])

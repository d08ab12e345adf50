"""A fixed numpy batch split over the towers: exact, repeatable input for equivalence studies.

Tower t gets rows [t*b, (t+1)*b) of the batch, as constants on its device, so N towers with
batch b see exactly what one tower with batch N*b sees.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.pipelines import base


class ConstantPipeline(base.Pipeline):
    """The same global batch every step, split evenly over the towers.

    Args:
      images: numpy array [global_batch, ...].
      labels: numpy int array [global_batch].
    """

    def __init__(self, images, labels):
        if len(images) != len(labels):
            raise ValueError('images has %d rows but labels has %d' % (len(images),
                                                                       len(labels)))
        self._images, self._labels = images, labels

    def tower_batches(self, topology):
        """See base class. Raises ValueError if the batch does not split over the towers."""
        n = topology.num_towers
        if len(self._images) % n:
            raise ValueError('a batch of %d does not split over %d towers'
                             % (len(self._images), n))
        size = len(self._images) // n
        batches = []
        for t, device in enumerate(topology.tower_devices):
            with tf.device(device), tf.name_scope('%s/%s' % (scopes.tower(t), scopes.INPUT)):
                rows = slice(t * size, (t + 1) * size)
                batches.append((tf.constant(self._images[rows]),
                                tf.constant(self._labels[rows])))
        return base.InputBatches(batches=batches, put_ops=[], warmup_ops=[])

"""An input-only step: the pipeline's batches delivered to every tower's device, no model.

Timing it gives the images/sec the input pipeline can deliver; against the same model's step
time on synthetic data (compute alone) it says which of the two bounds a training step.
"""
import collections

import tensorflow.compat.v1 as tf

from tfhp.ops import scopes

InputStep = collections.namedtuple('InputStep', [
    'train_op',         # delivers one batch to every tower (and runs every put)
    'warmup_ops',       # the pipeline's warm-up prefixes
    'images_per_step',  # images delivered per run of train_op
])


def build_step(pipeline, topology):
    """Builds a step that only moves input.

    Args:
      pipeline: a `tfhp.pipelines.base.Pipeline`.
      topology: a `tfhp.topology.Topology`.
    Returns:
      An `InputStep`.
    """
    inputs = pipeline.tower_batches(topology)
    delivered = []
    for t, (images, labels) in enumerate(inputs.batches):
        # An identity on the tower's device makes each batch arrive there, as a model would.
        with tf.device(topology.tower_devices[t]), tf.name_scope(scopes.tower(t)):
            delivered += [tf.identity(images), tf.identity(labels)]
    images_per_step = sum(int(images.shape[0]) for images, _ in inputs.batches)
    return InputStep(train_op=tf.group(*(delivered + list(inputs.put_ops)),
                                       name='input_only_step'),
                     warmup_ops=list(inputs.warmup_ops), images_per_step=images_per_step)

"""Batches to independent examples and back: split, and `parallel_stack` per tower.

Splitting a batch of records lets each example be decoded and preprocessed by its own ops, so
the executor's threads work on all of them at once. Putting them back with `tf.parallel_stack`
(not `tf.stack` or `tf.concat`, which start only once every input is ready) copies each example
into the batch as soon as it is ready, so the batch is complete almost when its slowest example
is. `parallel_stack` has no gradient and needs static shapes, which input pipelines have.
"""
import tensorflow.compat.v1 as tf


def split(batch):
    """The examples of `batch` (static first dimension), as a list of tensors."""
    size = tf.compat.dimension_value(batch.shape[0])
    if size is None:
        raise ValueError('split needs a static batch size, got shape %s' % batch.shape)
    return tf.unstack(batch, num=size)


def stack_towers(examples, num_towers):
    """Stacks per-example nests into one batch per tower, each example copied when ready.

    Args:
      examples: a list of nests of tensors with the same structure and static shapes;
        examples[t * per_tower + i] goes to tower t at row i.
      num_towers: number of towers; must divide len(examples).
    Returns:
      A list of num_towers nests, each leaf with a new first dimension of
      len(examples) // num_towers.
    Raises:
      ValueError: the examples do not split evenly over the towers.
    """
    if not examples or len(examples) % num_towers:
        raise ValueError('%d examples do not split evenly over %d towers'
                         % (len(examples), num_towers))
    per_tower = len(examples) // num_towers
    batches = []
    for t in range(num_towers):
        mine = examples[t * per_tower:(t + 1) * per_tower]
        leaves = [tf.nest.flatten(e) for e in mine]
        stacked = [tf.parallel_stack(list(column)) for column in zip(*leaves)]
        batches.append(tf.nest.pack_sequence_as(mine[0], stacked))
    return batches

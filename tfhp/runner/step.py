"""The training (and evaluation) step: input -> towers -> variable manager, as one graph.

One `session.run(step_ops.train_op)` runs a whole step: every tower's forward and backward
pass, gradient aggregation, the update, the batch-norm statistics update and every input
pipeline put that prefetches later steps' data. The builder reads only its arguments; it
contains no strategy names (the manager decides placement and aggregation).
"""
import collections
import contextlib

import tensorflow.compat.v1 as tf

from tfhp.runner import tower as tower_lib
from tfhp.models import layers
from tfhp.ops import in_place
from tfhp.ops import scopes

StepOps = collections.namedtuple('StepOps', [
    'train_op',       # run every step: update + BN statistics + input puts
    'loss',           # mean of tower losses (cross entropy + L2)
    'top1',           # fraction of this step's training images whose top-1 class is right
    'top5',           # same for top-5
    'warmup_ops',     # ordered; run warmup_ops[:k+1] for each k before the first step
    'post_init_ops',  # run once after variable initialisation
    'hooks',          # SessionRunHooks every worker must install
    'global_step',
    'step_made',      # None, or the global step the step makes once applied (base.Update)
], defaults=(None,))

EvalOps = collections.namedtuple('EvalOps', [
    'top1_correct',   # number of top-1 hits in this step's batches
    'top5_correct',
    'num_images',     # images evaluated per step (python int)
    'warmup_ops',
    'put_ops',
])


def _accuracy(logits, labels, k):
    return tf.reduce_sum(tf.cast(tf.nn.in_top_k(logits, labels, k), tf.float32))


def build_train_step(pipeline, model_fn, manager, optimizer_fn, topology, weight_decay=0.0,
                     gradient_clip=None, loss_scale=None, compile_towers=False,
                     decay_in_update=False):
    """Builds one synchronous data-parallel training step.

    Args:
      pipeline: a `tfhp.pipelines.base.Pipeline`.
      model_fn: model_fn(images, labels) -> (loss, logits) for one tower.
      manager: a `tfhp.replication.base.VariableManager`.
      optimizer_fn: no-argument callable returning a new optimizer; with an automatic
        `loss_scale`, one wrapped by `loss_scale.optimizer_fn` (so that it skips non-finite
        updates).
      topology: a `tfhp.topology.Topology`.
      weight_decay: L2 coefficient, applied to each tower's own variables.
      decay_in_update: the optimizer applies the weight decay itself
        (`tfhp.runner.optimizers.DecayingGradientDescent`): the towers differentiate the loss
        without its L2 term; the loss reported still has it.
      gradient_clip: clip each tower's gradients to [-clip, clip] before aggregation (the
        reference benchmarks' meaning of --gradient_clip); None disables.
      loss_scale: a `tfhp.runner.loss_scale.LossScale`: each tower differentiates its loss times the
        scale and divides its gradients by it (before clipping); None: no scaling.
      compile_towers: mark every op of each tower's forward and backward pass for XLA
        compilation (`tf.xla.experimental.jit_scope`); the input and the update stay outside.
    Returns:
      A `StepOps`.
    """
    global_step = tf.train.get_or_create_global_step()
    inputs = pipeline.tower_batches(topology)

    tower_grads, losses, top1, top5, bn_updates = [], [], [], [], []
    for t, (images, labels) in enumerate(inputs.batches):
        built_before = len(tf.get_default_graph().get_operations())
        with tf.name_scope(scopes.tower(t)), manager.tower_scope(t), _compiled(compile_towers):
            with tf.name_scope(scopes.FORWARD):
                update_ops_before = len(tf.get_collection(layers.BN_UPDATE_OPS))
                cross_entropy, logits = model_fn(images, labels)
                variables = manager.trainable_variables(t)
                l2 = tower_lib.l2_loss(variables, weight_decay)
                loss = tf.add(cross_entropy, l2, name='loss')
                differentiated = cross_entropy if decay_in_update else loss
                top1.append(_accuracy(logits, labels, 1))
                top5.append(_accuracy(logits, labels, 5))
                scale = loss_scale.value() if loss_scale else None
            with tf.name_scope(scopes.BACKWARD):
                grads = tf.gradients(differentiated * scale if loss_scale else differentiated,
                                     variables)
                if loss_scale:
                    grads = loss_scale.unscale(grads, scale)
                if gradient_clip is not None:
                    grads = [tf.clip_by_value(g, -gradient_clip, gradient_clip) for g in grads]
                grads = in_place.after_reads(
                    grads, variables, set(tf.get_default_graph().get_operations()[built_before:]))
                if decay_in_update:
                    # Nothing else orders the L2 term's reads before the update that decays
                    # the same weights: the reported loss must see this step's weights.
                    grads = [in_place.after(g, [l2.op]) if g is not None and
                             tower_lib.is_decayed(v) else g for g, v in zip(grads, variables)]
        if t == 0:
            # Batch-norm statistics follow the first tower only, as the reference benchmarks
            # do: the towers see the same distribution and one update per step is enough.
            bn_updates = tf.get_collection(layers.BN_UPDATE_OPS)[update_ops_before:]
        tower_grads.append(list(zip(grads, variables)))
        losses.append(loss)

    update = manager.apply_gradients(tower_grads, optimizer_fn, global_step)
    # Managers that apply once per tower and increment global_step themselves leave the scale
    # update to the step (see tfhp.runner.loss_scale).
    scale_update = [loss_scale.update_op()] if loss_scale else []
    num_images = sum(int(images.shape[0]) for images, _ in inputs.batches)
    return StepOps(
        train_op=tf.group(update.train_op, *(bn_updates + scale_update + list(inputs.put_ops)),
                          name='train_op'),
        loss=tf.reduce_mean(losses, name='mean_loss'),
        top1=tf.add_n(top1) / num_images,
        top5=tf.add_n(top5) / num_images,
        warmup_ops=list(inputs.warmup_ops),
        post_init_ops=list(update.post_init_ops),
        hooks=list(update.hooks),
        global_step=global_step,
        step_made=update.step_made)


def _compiled(compile_towers):
    """XLA's jit scope (gradients of its ops are compiled with them), or no scope."""
    return tf.xla.experimental.jit_scope() if compile_towers else contextlib.nullcontext()


def build_eval_step(pipeline, model_fn, manager, topology, compile_towers=False):
    """Builds one evaluation step: forward on every tower, top-1/top-5 hit counts.

    `model_fn` must be built with is_training=False; variables are created through the same
    manager scopes as in training, so a training checkpoint restores into them.
    `compile_towers` marks each tower's forward pass for XLA, as in `build_train_step`.
    """
    tf.train.get_or_create_global_step()
    inputs = pipeline.tower_batches(topology)
    top1, top5 = [], []
    for t, (images, labels) in enumerate(inputs.batches):
        with tf.name_scope(scopes.tower(t)), manager.tower_scope(t), _compiled(compile_towers):
            with tf.name_scope(scopes.FORWARD):
                _, logits = model_fn(images, labels)
                top1.append(_accuracy(logits, labels, 1))
                top5.append(_accuracy(logits, labels, 5))
    return EvalOps(top1_correct=tf.add_n(top1), top5_correct=tf.add_n(top5),
                   num_images=sum(int(images.shape[0]) for images, _ in inputs.batches),
                   warmup_ops=list(inputs.warmup_ops), put_ops=list(inputs.put_ops))

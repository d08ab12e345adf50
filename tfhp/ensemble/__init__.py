"""Ensembles: k checkpoints of one model evaluated as one model, each member on its own device.

The graph (`build`):

  host (the input device)                member i, on device i (virtual CPU i, or GPU i)
  validation pipeline -> one batch ----> model under variable scope member_<i> -> softmax
                                   <---- its probabilities
  mean of the k members' probabilities -> the ensemble's top-1 / top-5 hits; each member's too

The validation batch is read once, on the host, by the same pipeline an --eval run reads
(`tfhp.runner.build.validation_input`); every member reads that one tensor, so one `session.run`
evaluates the ensemble and every member on the same examples. The members are built by the
model function of an --eval run (`tower.make_model_fn`, inference-mode batch norm) under their
own variable scope, and member i's variables are restored from checkpoint i by their canonical
names, the checkpoint's (its scope prefix stripped): any variable manager's checkpoints load,
whatever its tower count. Only the model's variables are read (not global_step, not optimizer
slots). The ensemble predicts the mean of its members' softmax probabilities; with k copies of
one checkpoint it is that checkpoint, to float rounding.

A checkpoint that is missing, unreadable, or lacks one of the model's variables or holds it in
another shape (another model, another number of classes) is refused while the graph is built,
before any session: `CheckpointError`, naming the file and the variable.

`python -m tfhp.ensemble --checkpoints=A,B,C <tfhp flags>` is the command
(`tfhp/ensemble/__main__.py`); experiments/ensemble.py the study of an ensemble against its
members.
"""
import collections
import dataclasses
import os

import numpy as np
import tensorflow.compat.v1 as tf

from tfhp.runner import build as build_lib
from tfhp import session as session_lib
from tfhp import topology as topology_lib
from tfhp.runner import tower

MEMBER_SCOPE = 'member_%d'
# Top-k accuracies reported, where the data set has more than k classes.
TOP_K = (1, 5)


class CheckpointError(ValueError):
    """A checkpoint that cannot be a member: missing, unreadable, or of another model."""


Ensemble = collections.namedtuple('Ensemble', [
    'graph',
    'checkpoints',    # member i's checkpoint path (a directory resolved to its newest)
    'devices',        # member i's device
    'images', 'labels',  # the host batch every member reads (a feed may replace it)
    'member_probabilities',  # member i's softmax, [batch, classes], on its device
    'probabilities',  # their mean: the ensemble's prediction, on the host
    'correct',        # {k: [member 0's top-k hits, ..., the ensemble's]} in this batch
    'savers',         # member i's Saver: its canonical names -> its scoped variables
    'init', 'warmup_ops', 'put_ops', 'session_config',
    'batch_size',     # examples per batch
    'num_batches',    # batches that `evaluate` reads by default
])


def checkpoint_path(path):
    """The checkpoint `path` names: a checkpoint prefix (.../model.ckpt-300), or a directory's
    newest checkpoint.

    Raises:
      CheckpointError: no such checkpoint (the message names `path`).
    """
    if tf.io.gfile.isdir(path):
        newest = tf.train.latest_checkpoint(path)
        if not newest:
            raise CheckpointError('%s: no checkpoint in this directory' % path)
        return newest
    if not tf.io.gfile.exists(path + '.index'):
        raise CheckpointError('%s: no such checkpoint (no file %s.index)' % (path, path))
    return path


def _restored_variables(path, scope, model_name):
    """{canonical name: variable} of the member built under `scope`, each checked against the
    checkpoint at `path`."""
    try:
        held = dict(tf.train.list_variables(path))
    except (tf.errors.OpError, ValueError) as e:
        raise CheckpointError('%s: cannot read the checkpoint: %s' % (path, e)) from None
    prefix = scope + '/'
    restored = {}
    for variable in tf.get_collection(tf.GraphKeys.GLOBAL_VARIABLES, scope=prefix):
        name = variable.op.name[len(prefix):]
        if name not in held:
            raise CheckpointError('%s holds no variable %s: not a checkpoint of --model=%s '
                                  'with these flags' % (path, name, model_name))
        if list(held[name]) != variable.shape.as_list():
            raise CheckpointError(
                '%s: variable %s has shape %s, --model=%s with these flags has %s (another '
                'model or number of classes?)' % (path, name, list(held[name]), model_name,
                                                  variable.shape.as_list()))
        restored[name] = variable
    return restored


def _default_num_batches(cfg, validation):
    """--num_eval_batches; else the whole validation set of --data_dir once (its last partial
    batch left out); else --num_batches (synthetic data has no set to cover)."""
    if cfg.evaluation.num_eval_batches:
        return cfg.evaluation.num_eval_batches
    if cfg.data.data_dir:
        return max(1, validation.data_set.num_examples['validation'] // validation.batch_size)
    return cfg.run.num_batches


def build(cfg, checkpoints):
    """Builds the ensemble of `checkpoints` (finalized graph), member i on device i.

    Args:
      cfg: a `tfhp.config.BenchmarkConfig` with the members' model and data flags (the model,
        image size, classes, --data_dir, --eval_batch_size ...); it is evaluated as --eval.
      checkpoints: checkpoint prefixes or directories (their newest), one per member; on
        --device=cpu each member gets a virtual CPU device of its own, on --device=gpu a GPU.
    Returns:
      An `Ensemble`.
    Raises:
      CheckpointError: a checkpoint is missing, unreadable or not of this model.
      tfhp.config.ConfigError: the configuration cannot work on this machine.
    """
    if not checkpoints:
        raise CheckpointError('an ensemble needs at least one checkpoint')
    paths = [checkpoint_path(p) for p in checkpoints]
    cfg = dataclasses.replace(cfg, device=dataclasses.replace(cfg.device,
                                                              num_devices=len(paths)))
    members = topology_lib.Topology.local(cfg.device.device, len(paths))
    # The input pipeline's one tower is the host: the batch is read once, there.
    host = dataclasses.replace(members, tower_devices=(members.input_device,))
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(cfg.run.tf_random_seed)
        validation = build_lib.validation_input(cfg, host)
        inputs = validation.pipeline.tower_batches(host)
        [(images, labels)] = inputs.batches
        num_classes = validation.data_set.num_classes
        model_fn = tower.make_model_fn(
            validation.spec, num_classes, cfg.model.data_format, cfg.model.fuse_batchnorm,
            is_training=False, dtype=cfg.precision.dtype,
            variable_dtype=cfg.precision.variable_dtype)
        probabilities, savers = [], []
        for i, (path, device) in enumerate(zip(paths, members.tower_devices)):
            with tf.device(device), tf.variable_scope(MEMBER_SCOPE % i) as scope:
                _, logits = model_fn(images, labels)
                probabilities.append(tf.nn.softmax(logits, name='probabilities'))
            savers.append(tf.train.Saver(
                _restored_variables(path, scope.name, validation.spec.name), sharded=False))
        with tf.device(members.input_device), tf.name_scope('ensemble'):
            mean = tf.add_n(probabilities) / float(len(probabilities))
            correct = {k: [tf.reduce_sum(tf.cast(tf.nn.in_top_k(p, labels, k), tf.int32))
                           for p in probabilities + [mean]]
                       for k in TOP_K if k == 1 or k < num_classes}
        init = tf.group(tf.global_variables_initializer(), tf.local_variables_initializer())
    graph.finalize()
    proto = session_lib.config_proto(
        num_cpu_devices=len(paths) if cfg.device.device == 'cpu' else 1,
        num_intra_threads=cfg.device.num_intra_threads,
        num_inter_threads=cfg.device.num_inter_threads)
    return Ensemble(graph=graph, checkpoints=paths, devices=members.tower_devices,
                    images=images, labels=labels, member_probabilities=probabilities,
                    probabilities=mean, correct=correct, savers=savers, init=init,
                    warmup_ops=list(inputs.warmup_ops), put_ops=list(inputs.put_ops),
                    session_config=proto, batch_size=validation.batch_size,
                    num_batches=_default_num_batches(cfg, validation))


def restore(sess, ensemble):
    """Initialises `sess` (a session of ensemble.graph) and loads every member's checkpoint."""
    sess.run(ensemble.init)
    for saver, path in zip(ensemble.savers, ensemble.checkpoints):
        saver.restore(sess, path)


def _accuracies(hits, k_values, num_examples):
    return {'top_%d_accuracy' % k: hits[k] / num_examples for k in k_values}


def evaluate(ensemble, num_batches=None):
    """The ensemble and each member over the same `num_batches` validation batches.

    Args:
      ensemble: an `Ensemble`.
      num_batches: batches to evaluate; None: ensemble.num_batches.
    Returns:
      {'num_examples', 'ensemble': {'top_1_accuracy'[, 'top_5_accuracy']}, 'members': [the
       same, with 'checkpoint' and 'device', for each member]}.
    """
    num_batches = num_batches or ensemble.num_batches
    k_values = sorted(ensemble.correct)
    totals = {k: np.zeros(len(ensemble.correct[k]), np.int64) for k in k_values}
    with tf.Session(graph=ensemble.graph, config=ensemble.session_config) as sess:
        restore(sess, ensemble)
        session_lib.warm_up(sess, ensemble.warmup_ops)
        for _ in range(num_batches):
            correct, _ = sess.run([ensemble.correct, ensemble.put_ops])
            for k in k_values:
                totals[k] += correct[k]
    num_examples = num_batches * ensemble.batch_size
    members = [dict(_accuracies({k: float(totals[k][i]) for k in k_values}, k_values,
                                num_examples), checkpoint=path, device=device)
               for i, (path, device) in enumerate(zip(ensemble.checkpoints, ensemble.devices))]
    return {'num_examples': num_examples, 'members': members,
            'ensemble': _accuracies({k: float(totals[k][-1]) for k in k_values}, k_values,
                                    num_examples)}


def describe(figures):
    """The lines that print an `evaluate` result: each member, then the ensemble and its gain
    over its best member."""
    names = sorted(figures['ensemble'])
    lines = []
    for i, member in enumerate(figures['members']):
        lines.append('member %d  %-8s %s  %s' % (
            i, member['device'], '  '.join('%s %.4f' % (n, member[n]) for n in names),
            os.path.basename(member['checkpoint'])))
    best = max(m['top_1_accuracy'] for m in figures['members'])
    lines.append('ensemble of %d  %s  (top-1 %+.4f against the best member) [%d examples]' % (
        len(figures['members']),
        '  '.join('%s %.4f' % (n, figures['ensemble'][n]) for n in names),
        figures['ensemble']['top_1_accuracy'] - best, figures['num_examples']))
    return lines

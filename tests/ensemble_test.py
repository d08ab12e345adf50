"""Ensembles (tfhp.ensemble): members on devices of their own, loaded by canonical names,
their mean probability, and checkpoints refused by name; the command's exit status."""
import json
import os

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tests.pipelines import shapes
from tfhp.runner import benchmark
from tfhp import cli
from tfhp import ensemble
from tfhp.runner import tower
from tfhp.ensemble import __main__ as command
from tfhp.models import registry

BATCH = 8  # 3 batches are the 24 validation images


@pytest.fixture(name='data_dir', scope='module')
def _data_dir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp('shapes'))
    shapes.make_shapes(directory)
    return directory


def _config(data_dir, **run):
    """The trivial model on the tiny shapes, read in order (tf.data, unstaged), 3 batches of 8."""
    return testing.small_config(
        batch_size=BATCH, image_size=16, run=run,
        data={'data_dir': data_dir, 'use_datasets': True, 'staged_input': False,
              'random_crop_flip': False})


@pytest.fixture(name='checkpoints', scope='module')
def _checkpoints(data_dir, tmp_path_factory):
    """Two checkpoints of the trivial model, trained 3 steps from different seeds."""
    paths = []
    for seed in (1, 2):
        train_dir = str(tmp_path_factory.mktemp('member%d' % seed))
        benchmark.run(_config(data_dir, train_dir=train_dir, tf_random_seed=seed),
                      log=lambda _: None)
        paths.append(tf.train.latest_checkpoint(train_dir))
    return paths


def _eval_config(data_dir):
    return testing.replace(_config(data_dir), 'run', eval=True, train_dir=os.devnull)


def _probabilities(built, feed):
    """Each member's probabilities and the ensemble's on one fed batch."""
    with tf.Session(graph=built.graph, config=built.session_config) as sess:
        ensemble.restore(sess, built)
        return sess.run([built.member_probabilities, built.probabilities], feed)


def _batch():
    rng = np.random.default_rng(0)
    return (rng.uniform(-1, 1, [BATCH, 16, 16, 3]).astype(np.float32),
            np.arange(BATCH, dtype=np.int32) % shapes.NUM_CLASSES)


def test_copies_of_one_checkpoint_are_that_checkpoint(data_dir, checkpoints):
    built = ensemble.build(_eval_config(data_dir), [checkpoints[0]] * 3)
    images, labels = _batch()
    members, mean = _probabilities(built, {built.images: images, built.labels: labels})
    assert np.allclose(mean, members[0], rtol=0, atol=1e-6)
    figures = ensemble.evaluate(built)
    assert figures['num_examples'] == 24
    assert [m['top_1_accuracy'] for m in figures['members']] == [
        figures['ensemble']['top_1_accuracy']] * 3
    # 4 classes: top-1 only.
    assert set(figures['ensemble']) == {'top_1_accuracy'}


def test_each_member_is_on_its_own_device(data_dir, checkpoints):
    built = ensemble.build(_eval_config(data_dir), checkpoints)
    assert built.devices == ('/cpu:0', '/cpu:1')
    # Where the runtime placed each node of one evaluation (a variable's reads carry no
    # device of their own in the graph: they go where their variable is); the transfers'
    # receiving ends, named after what they receive, are left out.
    metadata = tf.RunMetadata()
    with tf.Session(graph=built.graph, config=built.session_config) as sess:
        ensemble.restore(sess, built)
        sess.run(built.correct, options=tf.RunOptions(output_partition_graphs=True),
                 run_metadata=metadata)
    placed = {node.name: tf.DeviceSpec.from_string(node.device).device_index
              for graph in metadata.partition_graphs for node in graph.node
              if node.op not in ('_Recv', '_HostRecv')}
    for i in range(2):
        member = {d for name, d in placed.items()
                  if name.startswith(ensemble.MEMBER_SCOPE % i + '/')}
        assert member == {i}
    # The one batch and the mean are on the host.
    assert placed[built.images.op.name] == placed[built.probabilities.op.name] == 0
    assert any(name.startswith('member_1/hidden/MatMul') for name in placed)


def _plain_probabilities(path, images, labels):
    """One model of checkpoint `path`, built and restored as any single model is (its own
    names), on one fed batch."""
    with tf.Graph().as_default():
        model_fn = tower.make_model_fn(registry.get('trivial'), shapes.NUM_CLASSES,
                                       is_training=False)
        _, logits = model_fn(tf.constant(images), tf.constant(labels))
        probabilities = tf.nn.softmax(logits)
        with tf.Session() as sess:
            tf.train.Saver().restore(sess, path)
            return sess.run(probabilities)


def test_members_are_their_checkpoints_evaluated_alone(data_dir, checkpoints):
    built = ensemble.build(_eval_config(data_dir), checkpoints)
    images, labels = _batch()
    members, mean = _probabilities(built, {built.images: images, built.labels: labels})
    alone = [_plain_probabilities(p, images, labels) for p in checkpoints]
    assert not np.allclose(alone[0], alone[1])  # the two members differ
    for member, single in zip(members, alone):
        assert np.allclose(member, single, rtol=0, atol=1e-6)
    assert np.allclose(mean, (alone[0] + alone[1]) / 2, rtol=0, atol=1e-6)
    # Over the validation batches: each member scores what an --eval run of it scores.
    figures = ensemble.evaluate(built)
    for member, path in zip(figures['members'], checkpoints):
        evaluated = benchmark.run(
            testing.replace(_config(data_dir), 'run', eval=True,
                            train_dir=os.path.dirname(path)), log=lambda _: None)
        assert member['top_1_accuracy'] == evaluated['top_1_accuracy']


def test_a_checkpoint_that_cannot_be_a_member_is_named(data_dir, checkpoints, tmp_path):
    cfg = _eval_config(data_dir)
    missing = str(tmp_path / 'model.ckpt-7')
    with pytest.raises(ensemble.CheckpointError, match='%s: no such checkpoint' % missing):
        ensemble.build(cfg, [checkpoints[0], missing])
    with pytest.raises(ensemble.CheckpointError, match='%s: no checkpoint' % tmp_path):
        ensemble.build(cfg, [str(tmp_path)])
    with pytest.raises(ensemble.CheckpointError,
                       match='%s holds no variable conv0/.*--model=lenet' %
                       checkpoints[1]):
        ensemble.build(testing.replace(cfg, 'model', name='lenet'), checkpoints[1:])
    # 10 classes of synthetic data: the checkpoints' logits have 4.
    ten_classes = testing.replace(cfg, 'data', data_dir=None, use_datasets=False)
    with pytest.raises(ensemble.CheckpointError,
                       match=r'%s: variable logits/weights has shape \[4096, 4\].*\[4096, 10\]'
                       % checkpoints[0]):
        ensemble.build(ten_classes, checkpoints)


def _command(args, capsys):
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp.ensemble'] + args)
    try:
        status = command.main(['tfhp.ensemble'])
    finally:
        cli.FLAGS.unparse_flags()
    out, err = capsys.readouterr()
    return status, out, err


def test_the_command_prints_the_figures_or_names_the_fault(data_dir, checkpoints, capsys):
    flags = ['--model=trivial', '--image_size=16', '--data_dir=' + data_dir, '--use_datasets',
             '--nostaged_input', '--eval_batch_size=%d' % BATCH]
    status, out, _ = _command(['--checkpoints=' + ','.join(checkpoints)] + flags, capsys)
    assert status == 0
    figures = json.loads(out.splitlines()[-1])
    assert [m['checkpoint'] for m in figures['members']] == checkpoints
    assert figures['num_examples'] == 24  # the whole validation set
    status, _, err = _command(['--checkpoints=/nonexistent/ckpt'] + flags, capsys)
    assert status == 2 and err.strip() == ('tfhp.ensemble: error: /nonexistent/ckpt: no such '
                                           'checkpoint (no file /nonexistent/ckpt.index)')

"""Training to accuracy as tf_cnn_benchmarks runs it: epochs, learning-rate flags, evaluation
during training, and --forward_only inference."""
import json
import re

import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import benchmark
from tfhp.runner import build
from tfhp.runner import resolve
from tfhp import cli
from tfhp import config as config_lib


def test_num_epochs_becomes_batches_of_the_global_batch():
    # CIFAR-10's 50,000 training images, 4 per device on 2 devices: 0.01 epochs = 63 steps,
    # the warm-up's one step among them.
    cfg = testing.small_config(data={'data_name': 'cifar10'}, device={'num_devices': 2},
                               run={'num_epochs': 0.01})
    resolved = resolve.resolve_epochs(cfg)
    assert (resolved.run.num_batches, resolved.run.num_epochs) == (62, 0.01)
    longer = resolve.resolve_epochs(testing.replace(cfg, 'run', num_warmup_batches=10))
    assert longer.run.num_batches == 53
    assert resolve.resolve_epochs(testing.small_config()).run.num_batches == 3


def test_the_learning_rate_is_on_the_progress_lines_and_in_the_result():
    # Warm-up 1 and 3 timed steps (global steps 1-3) of a rate halved every 2 steps (0.00016
    # epochs of 50,000 images, 4 a step); the result's is the next step's (global step 4).
    cfg = testing.small_config(data={'data_name': 'cifar10'}, optimizer={
        'learning_rate': 0.4, 'num_epochs_per_decay': 0.00016, 'learning_rate_decay_factor': 0.5})
    lines = []
    result = benchmark.run(cfg, log=lines.append)
    rates = [float(r) for r in re.findall(r'\tlr: (\S+)', '\n'.join(lines))]
    assert rates == [0.4, 0.2, 0.2]
    assert result['learning_rate'] == pytest.approx(0.1)


def _config(args):
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp'] + args)
    try:
        return cli.config_from_flags(cli.FLAGS)
    finally:
        cli.FLAGS.unparse_flags()


def test_num_epochs_and_num_batches_are_one_choice():
    assert _config(['--num_epochs=2']).run.num_epochs == 2
    with pytest.raises(config_lib.ConfigError, match='--num_epochs and --num_batches'):
        _config(['--num_epochs=2', '--num_batches=10'])


def test_init_learning_rate_is_learning_rate():
    assert _config(['--init_learning_rate=0.3']).optimizer.learning_rate == 0.3


def _learning_rate(cfg):
    built = build.build(cfg)
    # optimizers.learning_rate's identity (its name scope took 'learning_rate' itself).
    [rate] = [op.outputs[0] for op in built.graph.get_operations()
              if re.fullmatch(r'learning_rate(_\d+)?', op.name) and op.type == 'Identity']
    with tf.Session(graph=built.graph, config=built.session_config) as sess:
        # The rate reads no variable but the global step: the net's need no initialising.
        sess.run(tf.train.get_global_step(built.graph).initializer)
        return sess.run(rate)


def test_resnet_base_lr_scales_the_resnet_rate_with_the_batch():
    cfg = testing.small_config(model='resnet50', batch_size=8, image_size=32)
    assert _learning_rate(cfg) == pytest.approx(0.128 * 64 / 256)  # the default batch's rate
    based = testing.replace(cfg, 'optimizer', resnet_base_lr=0.256)
    assert _learning_rate(based) == pytest.approx(0.256 * 8 / 256)
    with pytest.raises(config_lib.ConfigError, match='--resnet_base_lr .* --model=lenet'):
        build.build(testing.replace(based, 'model', name='lenet'))


def test_forward_only_times_inference_from_the_checkpoint_if_there_is_one(tmp_path):
    out = tmp_path / 'r.jsonl'
    cfg = testing.small_config(model='lenet', image_size=28, num_batches=4,
                               run={'forward_only': True, 'result_file': str(out)})
    fresh = benchmark.run(cfg, log=lambda _: None)
    assert fresh['mode'] == 'forward_only' and fresh['num_steps'] == 4
    assert fresh['images_per_sec'] > 0 and fresh['global_step'] == 0
    assert 'top_1_accuracy' not in fresh and 'final_loss' not in fresh
    assert json.loads(out.read_text())['mode'] == 'forward_only'
    train = testing.small_config(model='lenet', image_size=28, num_batches=2,
                                 run={'train_dir': str(tmp_path / 'ckpt')})
    benchmark.run(train, log=lambda _: None)
    restored = benchmark.run(testing.replace(cfg, 'run', train_dir=str(tmp_path / 'ckpt'),
                                             result_file=None), log=lambda _: None)
    assert restored['global_step'] == 3  # 1 warm-up + 2 timed steps


def test_evaluation_during_training_is_between_timed_steps():
    lines = []
    cfg = testing.small_config(num_batches=5, evaluation={
        'eval_during_training_every_n_steps': 2, 'num_eval_batches': 3, 'eval_batch_size': 2})
    result = benchmark.run(cfg, log=lines.append)
    # After timed steps 2, 4 and the last one (5), past 1 warm-up step; 3 batches of 2 each.
    assert [e['global_step'] for e in result['evaluations']] == [3, 5, 6]
    assert all(0.0 <= e['top_1_accuracy'] <= e['top_5_accuracy'] <= 1.0
               for e in result['evaluations'])
    assert sum('[6 examples]' in line for line in lines) == 3
    assert result['num_steps'] == 5 and result['global_step'] == 6


def test_eval_uses_num_eval_batches_and_eval_batch_size(tmp_path):
    cfg = testing.small_config(num_batches=2, run={'train_dir': str(tmp_path)})
    benchmark.run(cfg, log=lambda _: None)
    evaluated = benchmark.run(testing.small_config(
        num_batches=2, run={'train_dir': str(tmp_path), 'eval': True},
        evaluation={'num_eval_batches': 5, 'eval_batch_size': 3}), log=lambda _: None)
    assert (evaluated['num_steps'], evaluated['batch_size']) == (5, 3)


@pytest.mark.parametrize('sections, flag', [
    (dict(run={'num_epochs': 0}), '--num_epochs'),
    (dict(run={'forward_only': True, 'eval': True, 'train_dir': '/tmp'}), '--forward_only'),
    (dict(run={'forward_only': True}, profile={'tfprof_file': '/tmp/p'}), '--tfprof_file'),
    (dict(run={'num_epochs': 1, 'eval': True, 'train_dir': '/tmp'}), '--num_epochs'),
    (dict(evaluation={'num_eval_batches': 3}), '--num_eval_batches'),
    (dict(evaluation={'stop_at_top_1_accuracy': 0.5}), '--stop_at_top_1_accuracy'),
    (dict(evaluation={'eval_during_training_every_n_steps': 2,
                      'eval_during_training_every_n_epochs': 1.0}),
     '--eval_during_training_every_n_steps'),
    (dict(evaluation={'eval_during_training_every_n_steps': 2},
          cluster={'cross_replica_sync': False}), '--eval_during_training'),
    (dict(optimizer={'num_epochs_per_decay': 2}), '--learning_rate_decay_factor'),
    (dict(optimizer={'minimum_learning_rate': 0.1}), '--minimum_learning_rate'),
    (dict(optimizer={'num_epochs_per_decay': 2, 'learning_rate_decay_factor': 0.5,
                     'piecewise_learning_rate_schedule': '0.1;1;0.01'}),
     '--piecewise_learning_rate_schedule'),
    (dict(optimizer={'resnet_base_lr': 0.1, 'learning_rate': 0.1}), '--resnet_base_lr'),
])
def test_settings_that_cannot_work_name_the_flag(sections, flag):
    with pytest.raises(config_lib.ConfigError, match=flag):
        testing.small_config(**sections)

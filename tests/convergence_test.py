"""Training to accuracy on the learnable synthetic set (`tfhp.data.synthetic`): float16 with
automatic loss scaling and bfloat16 reach float32's accuracy, and --stop_at_top_1_accuracy ends
training at the first evaluation that reaches it.

The model is a small CNN (one 3x3 convolution, 16 filters), not lenet: on this CPU build
float16's Conv2DBackpropFilter has no fast kernel (lenet at 16x16: ~1.5 s per float16 step),
so a float16 run of lenet would take minutes.
"""
import pytest

from tests import testing
from tfhp.runner import benchmark
from tfhp.data import synthetic
from tfhp.models import registry

MODEL = 'convergence_test_cnn'
TRAIN, VALIDATION = 4000, 500


def _cnn(builder, images, num_classes):
    x = builder.conv(images, 16, 3)
    x = builder.max_pool(x, 4)
    x = builder.dense(builder.flatten(x), 64)
    return builder.dense(x, num_classes, activation=None)


@pytest.fixture(name='model')
def _model(monkeypatch):
    """MODEL, registered for one test only: the registry is global, and models_test checks
    that every model in it is a published net."""
    monkeypatch.setattr(registry, '_SPECS', dict(registry._SPECS))  # pylint: disable=protected-access
    registry.register(MODEL, _cnn, 16, 32, 0.05)
    return MODEL


@pytest.fixture(name='data_dir', scope='module')
def _data_dir(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp('learnable'))
    synthetic.generate(directory, num_classes=10, image_size=16, train_examples=TRAIN,
                       validation_examples=VALIDATION, train_shards=2, validation_shards=1)
    return directory


# The evaluation graph parses and decodes each record of a batch with ops of its own: at 50 a
# batch its build took about as long as the 375 training steps; 10 reads the same 500 images.
EVAL_BATCH = 10


def _config(model, data_dir, **sections):
    """3 epochs of batches of 32 with momentum and a staircase decay (x0.3 every epoch),
    evaluated on the whole validation set after each epoch; training images whole (random
    16-pixel crops would cut the shapes apart)."""
    cfg = testing.small_config(
        model=model, batch_size=32, image_size=16,
        optimizer={'optimizer': 'momentum', 'learning_rate': 0.05,
                   'num_epochs_per_decay': 1, 'learning_rate_decay_factor': 0.3},
        data={'data_dir': data_dir, 'random_crop_flip': False},
        evaluation={'eval_during_training_every_n_epochs': 1, 'eval_batch_size': EVAL_BATCH,
                    'num_eval_batches': VALIDATION // EVAL_BATCH},
        run={'num_epochs': 3, 'num_warmup_batches': 0, 'display_every': 125})
    for section, fields in sections.items():
        cfg = testing.replace(cfg, section, **fields)
    return cfg


# Measured over seeds 1-7 (2026-11-23, this 2-core CPU), final top-1 on the 500 validation
# images: float32 0.632 +- 0.026 (0.602-0.668), bfloat16 0.641 +- 0.013, float16 with the
# automatic scale 0.631 +- 0.017 (5 seeds); with the same seed the 16-bit runs landed within
# 0.03 of float32 when run alone. Same-seed runs are not bit-identical (the thread pools order
# the sums): inside the whole suite float32 reached 0.672 and float16 0.606 (0.066 apart), so
# the bound is about 3 standard deviations of two runs' difference. Chance is 0.1.
TOLERANCE = 0.1


def test_16_bit_training_reaches_float32_accuracy(model, data_dir):
    accuracy = {}
    for name, precision in (('float32', {}),
                            ('float16', {'use_fp16': True,
                                         'fp16_enable_auto_loss_scale': True}),
                            ('bfloat16', {'compute_dtype': 'bfloat16'})):
        result = benchmark.run(_config(model, data_dir, precision=precision),
                               log=lambda _: None)
        assert result['compute_dtype'] == name
        assert [e['global_step'] for e in result['evaluations']] == [125, 250, 375]
        accuracy[name] = result['evaluations'][-1]['top_1_accuracy']
    assert accuracy['float32'] > 0.5, accuracy
    assert abs(accuracy['float16'] - accuracy['float32']) <= TOLERANCE, accuracy
    assert abs(accuracy['bfloat16'] - accuracy['float32']) <= TOLERANCE, accuracy


def test_training_stops_at_the_first_evaluation_reaching_the_target(model, data_dir):
    lines = []
    cfg = _config(model, data_dir, evaluation={'eval_during_training_every_n_epochs': None,
                                        'eval_during_training_every_n_steps': 25,
                                        'stop_at_top_1_accuracy': 0.4})
    result = benchmark.run(cfg, log=lines.append)
    accuracies = [e['top_1_accuracy'] for e in result['evaluations']]
    assert accuracies[-1] >= 0.4 and all(a < 0.4 for a in accuracies[:-1])
    assert result['num_steps'] == 25 * len(accuracies) < 375
    assert result['global_step'] == result['num_steps']
    assert any(line.startswith('Stopping: top-1 accuracy') for line in lines)

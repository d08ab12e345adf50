"""The runner on real (generated) data: data-set classes, both pipelines, input-only mode,
corrupt records named or skipped, bad data directories refused before building."""
import os

import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tests.pipelines import shapes
from tfhp.runner import benchmark
from tfhp.runner import build
from tfhp import config as config_lib
from tfhp.data import info as info_lib

# lenet at 28x28 with 4 classes: the published 1000-class count with a 4-way last layer.
LENET_4_CLASS_PARAMS = 2172840 - (512 * 1000 + 1000) + (512 * 4 + 4)



def _config(data_dir, **data):
    fields = dict(data_dir=data_dir, record_input_parallelism=2, record_input_buffer_size=16)
    fields.update(data)
    return testing.small_config(model='lenet', image_size=28, num_batches=3, data=fields)


@pytest.mark.parametrize('use_datasets', [False, True])
def test_training_on_a_data_set_uses_its_classes(data_dir, use_datasets):
    result = benchmark.run(_config(data_dir, use_datasets=use_datasets), log=lambda _: None)
    assert result['num_params'] == LENET_4_CLASS_PARAMS
    # The configuration recorded is the data set's classes, not --num_classes' 10.
    assert result['config']['model']['num_classes'] == shapes.NUM_CLASSES
    assert result['global_step'] == 4 and result['final_loss'] > 0
    assert 'skipped_records' not in result


def test_input_only_mode_times_the_pipeline_alone(data_dir):
    result = benchmark.run(_config(data_dir, input_only=True), log=lambda _: None)
    assert result['mode'] == 'input_only' and result['num_params'] == 0
    assert result['num_steps'] == 3 and result['images_per_sec'] > 0


@pytest.mark.parametrize('use_datasets', [False, True])
def test_16_bit_images_reach_the_model_and_train(data_dir, use_datasets):
    cfg = _config(data_dir, use_datasets=use_datasets, image_dtype='float16')
    casts = [op for op in build.build(cfg).graph.get_operations()
             if op.name.endswith('model_input')]
    assert casts and all(op.inputs[0].dtype == tf.float16 for op in casts)
    result = benchmark.run(cfg, log=lambda _: None)
    assert 0 < result['final_loss'] < 10
    float32 = build.build(_config(data_dir, use_datasets=use_datasets)).graph
    assert not [op for op in float32.get_operations() if op.name.endswith('model_input')]


@pytest.mark.parametrize('use_datasets, requested, expected', [
    (False, 0, 2 * 3),   # RecordInput: its per-image ops share the inter-op pool
    (True, 0, 0),        # tf.data has threads of its own: TensorFlow's default
    (False, 5, 5),       # a size the user asks for is kept
])
def test_the_inter_op_pool_grows_when_the_graph_preprocesses(data_dir, monkeypatch,
                                                             use_datasets, requested, expected):
    monkeypatch.setattr(os, 'sched_getaffinity', lambda pid: {0, 1, 2})   # a 3-core machine
    cfg = testing.replace(_config(data_dir, use_datasets=use_datasets), 'device',
                          num_inter_threads=requested)
    proto = build.build(cfg).session_config
    assert proto.inter_op_parallelism_threads == expected
    assert proto.intra_op_parallelism_threads == 0


def _corrupt_dir(tmp_path):
    shapes.make_corrupt(str(tmp_path), subset='train')
    info_lib.write(str(tmp_path), info_lib.DataSetInfo('corrupt', 4, {'train': 11}))
    return str(tmp_path)


@pytest.mark.parametrize('use_datasets', [False, True])
def test_a_corrupt_record_is_named_by_file_and_index(tmp_path, use_datasets):
    cfg = testing.replace(_config(_corrupt_dir(tmp_path), use_datasets=use_datasets), 'model',
                          batch_size=11)
    with pytest.raises(config_lib.ConfigError) as raised:
        benchmark.run(cfg, log=lambda _: None)
    assert str(raised.value) == (
        '--data_dir: %s/train-00000-of-00001 record 2: not a tf.train.Example '
        '(--skip_corrupt_records skips and counts such records)' % tmp_path)


def _cut_short_dir(tmp_path, cut):
    """Shards cut short (`shapes.make_cut_short`), with their data-set info."""
    shapes.make_cut_short(str(tmp_path), cut)
    info_lib.write(str(tmp_path), info_lib.DataSetInfo('cut', 4, {'train': 4}))
    return str(tmp_path)


def test_a_cut_short_shard_is_skipped_and_counted_on_tf_data(tmp_path):
    cfg = _config(_cut_short_dir(tmp_path, 'partial'), use_datasets=True,
                  skip_corrupt_records=True)
    result = benchmark.run(testing.replace(cfg, 'model', batch_size=4), log=lambda _: None)
    assert result['global_step'] == 4
    # 5 batches (the run's 4 steps and the final loss), each one epoch: the 4 whole records,
    # and the partial shard counted once, before or after the batch's last record.
    assert result['skipped_records'] in (4, 5)


@pytest.mark.parametrize('cut, message', [
    ('data', 'train-00000-of-00001 is cut short: its 4 complete record\\(s\\) end at byte '),
    ('partial', 'train-00001-of-00002: not a TFRecord file, or cut short before its first '
                'record ends'),
])
def test_a_cut_short_shard_is_refused_on_recordinput_without_the_skip_flag_hint(tmp_path, cut,
                                                                               message):
    cfg = _config(_cut_short_dir(tmp_path, cut), skip_corrupt_records=True)
    with pytest.raises(config_lib.ConfigError, match='^--data_dir: .*' + message) as raised:
        benchmark.run(cfg, log=lambda _: None)
    assert '--skip_corrupt_records' not in str(raised.value)


def test_corrupt_records_can_be_skipped_and_counted(tmp_path):
    # Batches of 11 from a buffer of 11: every batch is one epoch, holding all 3 corrupt records.
    cfg = _config(_corrupt_dir(tmp_path), skip_corrupt_records=True,
                  record_input_buffer_size=11, record_input_parallelism=1)
    cfg = testing.replace(testing.replace(cfg, 'model', batch_size=11), 'run', num_batches=2)
    result = benchmark.run(cfg, log=lambda _: None)
    # Preprocessed batches: the second warm-up prefix, 1 warm-up step and 2 timed steps.
    assert result['skipped_records'] == 4 * 3


@pytest.mark.parametrize('files, message', [
    (None, 'directory .*missing does not exist'),
    ({}, 'no file matches .*/train-\\*-of-\\*'),
    ({'train-00000-of-00001': b''}, 'the 1 file.* hold no record'),
])
def test_unusable_data_directories_are_refused(tmp_path, files, message):
    directory = tmp_path / 'missing'
    if files is not None:
        directory.mkdir()
        for name, content in files.items():
            (directory / name).write_bytes(content)
    with pytest.raises(config_lib.ConfigError, match='--data_dir: ' + message):
        benchmark.run(_config(str(directory)), log=lambda _: None)


def test_data_flags_without_a_data_directory_are_refused():
    with pytest.raises(config_lib.ConfigError, match='--use_datasets needs --data_dir'):
        config_lib.DataConfig(use_datasets=True)
    with pytest.raises(config_lib.ConfigError, match='--record_input_shift_ratio'):
        config_lib.DataConfig(record_input_shift_ratio=1.5)

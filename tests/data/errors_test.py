"""describe_corrupt_input on the errors real failing steps raise, as a distributed worker's
error path or the one-process runner gets them."""
import pytest
import tensorflow.compat.v1 as tf

from tests.pipelines import shapes
from tfhp import config as config_lib
from tfhp import topology as topology_lib
from tfhp.data import errors
from tfhp.data import info as data_info
from tfhp.ops import scopes
from tfhp.pipelines import datasets
from tfhp.pipelines import example_format
from tfhp.pipelines import records

# The small data sets of tests.pipelines.shapes: 4 classes of JPEGs.
INFO = data_info.DataSetInfo(name='shapes', num_classes=4, num_examples={})


def _failure(pipeline):
    """The error the first batch of `pipeline` (built in a fresh graph) raises."""
    with tf.Graph().as_default():
        inputs = pipeline().tower_batches(topology_lib.Topology.local('cpu', 1))
        with tf.Session() as sess:
            sess.run(tf.local_variables_initializer())
            with pytest.raises(tf.errors.OpError) as raised:
                for _ in range(3):
                    sess.run(inputs.batches)
    return raised.value


def _pipeline(use_datasets, pattern, batch_size, **kwargs):
    if use_datasets:
        return lambda: datasets.DatasetPipeline(pattern, batch_size, 12, 4, staged=False,
                                                **kwargs)
    return lambda: records.RecordsPipeline(pattern, batch_size, 12, 4, staged=False,
                                           parallelism=1, **kwargs)


@pytest.mark.parametrize('use_datasets', [False, True])
def test_a_failed_step_is_traced_to_the_first_corrupt_record(tmp_path, use_datasets):
    pattern = shapes.make_corrupt(str(tmp_path), subset='train')
    error = _failure(_pipeline(use_datasets, pattern, 11))
    data = config_lib.DataConfig(data_dir=str(tmp_path), use_datasets=use_datasets)
    assert errors.describe_corrupt_input(data, error, 'train', INFO) == (
        '--data_dir: %s/train-00000-of-00001 record 2: not a tf.train.Example '
        '(--skip_corrupt_records skips and counts such records)' % tmp_path)


def _flip_a_byte_of_record_1(tmp_path):
    """A shard of 4 good records whose record 1 fails its data checksum; its pattern."""
    path = tmp_path / 'train-00000-of-00001'
    good = shapes.good_records(4)
    with tf.io.TFRecordWriter(str(path)) as writer:
        for record in good:
            writer.write(record)
    data = bytearray(path.read_bytes())
    data[len(good[0]) + 16 + 20] ^= 0xFF  # inside record 1's data
    path.write_bytes(bytes(data))
    return example_format.shard_pattern(str(tmp_path), 'train')


def test_broken_framing_that_recordinput_cannot_skip_is_named_without_the_skip_flag(tmp_path):
    pattern = _flip_a_byte_of_record_1(tmp_path)
    error = _failure(_pipeline(False, pattern, 4, skip_corrupt=True))
    assert isinstance(error, tf.errors.DataLossError)
    data = config_lib.DataConfig(data_dir=str(tmp_path), skip_corrupt_records=True)
    message = errors.describe_corrupt_input(data, error, 'train', INFO)
    assert message.startswith('--data_dir: %s/train-00000-of-00001 record 1: corrupt TFRecord '
                              'framing (' % tmp_path)
    assert message.endswith('(RecordInput cannot skip broken framing; with --use_datasets it '
                            'skips the rest of such a file and counts it)')
    assert '--skip_corrupt_records' not in message
    # Not skipping, the same problem on tf.data: the flag would help there.
    unskipped = config_lib.DataConfig(data_dir=str(tmp_path), use_datasets=True)
    assert errors.describe_corrupt_input(unskipped, error, 'train', INFO).endswith(
        '(--skip_corrupt_records skips the rest of such a file and counts it)')


def test_tf_data_skipping_every_problem_leaves_nothing_to_name(tmp_path):
    with tf.io.TFRecordWriter(str(tmp_path / 'train-00000-of-00001')) as writer:
        for i in range(3):
            writer.write(b'not an Example %d' % i)
    pattern = example_format.shard_pattern(str(tmp_path), 'train')
    error = _failure(_pipeline(True, pattern, 2, skip_corrupt=True))  # 1000 corrupt in a row
    data = config_lib.DataConfig(data_dir=str(tmp_path), use_datasets=True,
                                 skip_corrupt_records=True)
    assert errors.describe_corrupt_input(data, error, 'train', INFO) is None


@pytest.mark.parametrize('scope, named', [('tower_0/forward', False),
                                          (scopes.PREPROCESS, True)])
def test_only_failures_of_input_ops_lead_to_a_scan(tmp_path, scope, named):
    shapes.make_corrupt(str(tmp_path), subset='train')
    with tf.Graph().as_default():
        with tf.name_scope(scope):
            check = tf.debugging.Assert(tf.constant(False), ['failed'])
        with tf.Session() as sess:
            with pytest.raises(tf.errors.InvalidArgumentError) as raised:
                sess.run(check)
    data = config_lib.DataConfig(data_dir=str(tmp_path))
    message = errors.describe_corrupt_input(data, raised.value, 'train', INFO)
    assert (message is not None) == named

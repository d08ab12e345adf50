"""Input pipelines: each turns a data source into one batch per tower (see `base.Pipeline`).

`make_pipeline` is the one place a data configuration is turned into a pipeline: synthetic
data without a data directory, else the RecordInput pipeline or, with `use_datasets`, the
tf.data one.

  base.py               the Pipeline interface and InputSpec
  synthetic.py          device-resident synthetic batches; constant.py, a constant batch
  records.py            RecordInput -> parse -> preprocess -> one batch per tower
  datasets.py           the tf.data variant
  software_pipeline.py  a chain of stages: warm-up by prefix, drain
  preprocessing.py      per-example transforms (decode, crop, flip, normalise)
  example_format.py     the record layout, defined once
  input_only.py         the input alone, timed (--input_only)
"""
import tensorflow.compat.v1 as tf

from tfhp.pipelines import datasets
from tfhp.pipelines import example_format
from tfhp.pipelines import records
from tfhp.pipelines import synthetic


def preprocesses_in_graph(data_config):
    """Whether `make_pipeline` builds a pipeline whose per-image ops run in the session's own
    thread pools (the RecordInput one) rather than in tf.data's threads or not at all."""
    return bool(data_config.data_dir) and not data_config.use_datasets


def make_pipeline(data_config, batch_size, image_size, num_classes, data_format='NHWC',
                  train=True, seed=1234, shift_ratio=None, data_name=None,
                  deterministic=False):
    """Builds the pipeline a `tfhp.config.DataConfig` describes.

    Args:
      data_config: a `tfhp.config.DataConfig`.
      batch_size: per-tower batch size.
      image_size: square image size.
      num_classes: number of classes (labels of real data must lie below it).
      data_format: 'NHWC' or 'NCHW'.
      train: the training subset and augmentation, else the validation subset and crop.
      seed: seed of the data order and random augmentation.
      shift_ratio: RecordInput's shift ratio; None takes data_config's.
      data_name: the data set's name (the directory's, when data_config leaves it open);
        'cifar10' selects the CIFAR-10 preprocessing. Synthetic data ignores it: its batches
        are random images of `image_size` and labels below `num_classes` either way.
      deterministic: every run of one seed reads the same batches in the same order (the
        pipelines' `deterministic`); synthetic data always does.
    Returns:
      A `tfhp.pipelines.base.Pipeline`.
    Raises:
      tfhp.ops.record_input.InputFilesError: the subset's files cannot feed a reader.
    """
    dtype = tf.as_dtype(data_config.image_dtype)
    if not data_config.data_dir:
        return synthetic.SyntheticPipeline(batch_size, image_size, num_classes,
                                           data_format=data_format, seed=seed, dtype=dtype)
    pattern = example_format.shard_pattern(data_config.data_dir,
                                           'train' if train else 'validation')
    common = dict(train=train, data_format=data_format, dtype=dtype,
                  distortions=data_config.distortions, crop_flip=data_config.random_crop_flip,
                  seed=seed, staged=data_config.staged_input,
                  skip_corrupt=data_config.skip_corrupt_records, data_name=data_name,
                  deterministic=deterministic)
    if not preprocesses_in_graph(data_config):
        return datasets.DatasetPipeline(
            pattern, batch_size, image_size, num_classes,
            num_private_threads=data_config.datasets_num_private_threads,
            prefetch_buffer_size=data_config.datasets_prefetch_buffer_size,
            use_caching=data_config.datasets_use_caching,
            repeat_cached_sample=data_config.datasets_repeat_cached_sample, **common)
    return records.RecordsPipeline(
        pattern, batch_size, image_size, num_classes,
        parallelism=data_config.record_input_parallelism,
        group_size=data_config.batch_group_size,
        buffer_size=data_config.record_input_buffer_size,
        shift_ratio=(data_config.record_input_shift_ratio if shift_ratio is None else
                     shift_ratio), **common)

"""DataConfig: where input comes from and how the input pipeline is built."""
import dataclasses
from typing import Optional

from tfhp.config import errors
from tfhp.config import replication
from tfhp.data import info as data_info

# Images are staged in the dtypes gradients are transferred in.
IMAGE_DTYPES = replication.TRANSFER_DTYPES


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Where input comes from and how the input pipeline is built (tfhp.pipelines).

    Attributes:
      data_dir: directory of TFRecord shards in the ImageNet format; None: synthetic data.
      data_name: the data set's expected name ('imagenet', or the name in the directory's
        dataset_info.json); None accepts what the directory holds. Without data_dir it names
        the data set synthetic data stands in for ('imagenet', the default, or 'cifar10');
        'cifar10' also selects the CIFAR-10 models and preprocessing.
      use_datasets: read through tf.data instead of RecordInput + staging.
      datasets_num_private_threads: tf.data private thread pool size (0: shared pool).
      datasets_prefetch_buffer_size: batches tf.data prefetches on the host.
      datasets_use_caching: tf.data keeps the records (still encoded) in memory after the
        first epoch, so later epochs read no file.
      datasets_repeat_cached_sample: tf.data reads one record and repeats it forever: input
        at memory speed, for tests and benchmarks of what follows the read.
      record_input_parallelism: RecordInput reader threads.
      record_input_buffer_size: records in RecordInput's shuffle buffer.
      record_input_shift_ratio: fraction of the file list RecordInput readers skip at the
        start (workers sharing files use task / num_workers).
      distortions: tf_cnn_benchmarks' optional distortions of training images: random colour
        distortion for ImageNet-format data (whose random crop and flip are always on), the
        pad-4 random crop and flip for CIFAR-10.
      random_crop_flip: ImageNet-format training images get a random bounding-box crop and a
        random left-right flip (always, in tf_cnn_benchmarks); False resizes the whole image
        (tiny images a crop would cut the object out of).
      staged_input: software-pipeline input and compute (staging areas, warm-up); false runs
        read, preprocess and compute one after another each step.
      skip_corrupt_records: skip and count records that fail to parse or decode; the tf.data
        pipeline also skips the rest of a file whose framing breaks (counted as one record),
        the RecordInput one refuses a file cut short before building.
      input_only: time the input pipeline alone (no model).
      image_dtype: dtype of the images the pipeline stages onto the devices (16-bit halves the
        bytes staged and copied); the model casts them to its compute dtype.
      batch_group_size: tf_cnn_benchmarks' batches per run of its input producer: the
        RecordInput pipeline reads and preprocesses this many steps' batches at once, once
        every so many steps (`software_pipeline.chain`'s groups). Synthetic data has no
        producer (its batches stay on the devices), so it takes any value and ignores it.
    """
    data_dir: Optional[str] = None
    data_name: Optional[str] = None
    use_datasets: bool = False
    datasets_num_private_threads: int = 0
    datasets_prefetch_buffer_size: int = 1
    datasets_use_caching: bool = False
    datasets_repeat_cached_sample: bool = False
    record_input_parallelism: int = 16
    record_input_buffer_size: int = 10000
    record_input_shift_ratio: float = 0.0
    distortions: bool = False
    random_crop_flip: bool = True
    staged_input: bool = True
    skip_corrupt_records: bool = False
    input_only: bool = False
    image_dtype: str = 'float32'
    batch_group_size: int = 1

    def __post_init__(self):
        for flag in ('use_datasets', 'skip_corrupt_records'):
            errors.require(self.data_dir or not getattr(self, flag),
                           '--%s needs --data_dir (synthetic data has no files)', flag)
        for flag in ('datasets_use_caching', 'datasets_repeat_cached_sample'):
            errors.require(self.use_datasets or not getattr(self, flag),
                           '--%s is a tf.data setting: it needs --use_datasets (and --data_dir)',
                           flag)
        errors.require(not (self.datasets_repeat_cached_sample and self.skip_corrupt_records),
                       '--datasets_repeat_cached_sample repeats one record; '
                       '--skip_corrupt_records does not apply')
        errors.require_at_least(self, 1, 'batch_group_size')
        grouped = self.batch_group_size > 1 and self.data_dir
        errors.require(not (grouped and self.use_datasets),
                       '--batch_group_size=%d groups the RecordInput pipeline\'s batches; '
                       'tf.data (--use_datasets) batches and prefetches on its own threads: '
                       'use --datasets_prefetch_buffer_size', self.batch_group_size)
        errors.require(not (grouped and not self.staged_input),
                       '--batch_group_size=%d puts a group of batches into staging areas; it '
                       'needs --staged_input', self.batch_group_size)
        errors.require(self.data_dir or self.data_name in (None,) + tuple(data_info.STAND_INS),
                       '--data_name=%s needs --data_dir: synthetic data stands in only for %s',
                       self.data_name, ' or '.join(sorted(data_info.STAND_INS)))
        errors.require_at_least(self, 0, 'datasets_num_private_threads')
        errors.require_at_least(self, 1, 'datasets_prefetch_buffer_size',
                                'record_input_parallelism', 'record_input_buffer_size')
        errors.require_choice(self, 'image_dtype', IMAGE_DTYPES)
        errors.require(0.0 <= self.record_input_shift_ratio < 1.0,
                       '--record_input_shift_ratio must be in [0, 1), got %s',
                       self.record_input_shift_ratio)

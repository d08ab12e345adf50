"""The hand-built input pipeline: RecordInput, per-record preprocessing, parallel_stack, staging.

  A  read       RecordInput takes one global batch of serialized records (input device).
  S1            a staging area on the input device.
  B  preprocess the batch is split into records, each parsed, decoded and augmented by its own
                ops; `parallel_stack` builds each tower's batch as its records finish.
  S2            one staging area per tower, on the tower's device: its put is the host-to-device
                copy, which overlaps with the towers' compute on the previous step's data.
  C             the towers (the step builder) read S2.

With `staged=True` one `session.run` of the train op reads step k+2, preprocesses step k+1 and
computes step k; the warm-up (two prefixes, see `software_pipeline`) fills S1 and S2 first.
With `group_size=G` (--batch_group_size) A reads G global batches at once and B preprocesses
them and puts G batches into each tower's S2, each once every G steps
(`software_pipeline.chain`'s groups); the towers still take one batch per step.
With `staged=False` A, B and C run one after another on the same batch every step.

RecordInput's readers fill its shuffle buffer while the step takes records out of it, so which
records a batch holds depends on the threads' timing: two runs of one seed differ. With
`deterministic=True` (--deterministic) stage A is a seeded tf.data reader instead
(`datasets.shuffled_records`: the same files, a shuffle buffer of `buffer_size` records, an
order the seed fixes); B and the staging areas are unchanged, and each record's random crop and
flip are ops of their own, whose draws the graph's seed fixes whatever order they run in.

Corrupt records (not an Example, bytes that are not a JPEG, a label out of range) fail the step
by default. With `skip_corrupt=True` each is counted in a local variable of the
`preprocessing.SKIPPED_RECORDS` collection and its slot in the batch is filled by another valid
record of the same tower batch, so batches keep their size. A record whose TFRecord framing is
broken cannot be skipped: RecordInput itself fails, for good (`tfhp.data.check` names the file).
So when skipping, a file cut short is refused when the pipeline is made
(`record_input.check_whole`); a checksum error inside a file still fails the step.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import batching
from tfhp.ops import record_input
from tfhp.ops import scopes
from tfhp.pipelines import base
from tfhp.pipelines import datasets
from tfhp.pipelines import preprocessing
from tfhp.pipelines import software_pipeline


def fill_invalid(batch, valid):
    """Replaces the rows of `batch` (a nest) whose `valid` flag is False by valid rows.

    Row i takes the (i mod num_valid)-th valid row; fails if no row is valid.
    """
    kept = tf.reshape(tf.where(valid), [-1])
    num_kept = tf.size(kept)
    check = tf.debugging.Assert(num_kept > 0, ['every record of a batch was corrupt'])
    with tf.control_dependencies([check]):
        rows = tf.gather(kept, tf.range(tf.size(valid)) % num_kept)
    return tf.nest.map_structure(lambda t: tf.gather(t, rows), batch)


class RecordsPipeline(base.Pipeline):
    """Images and labels from TFRecord files in the ImageNet format.

    Args:
      file_pattern: glob of the shards, e.g. example_format.shard_pattern(dir, 'train').
      batch_size: per-tower batch size.
      image_size: output height and width.
      num_classes: labels must lie in [0, num_classes).
      train: training augmentation (True) or the evaluation crop (False).
      data_format: 'NHWC' or 'NCHW'.
      dtype: image dtype (float32, float16 or bfloat16).
      distortions: the data set's optional training augmentation (colour for ImageNet-format
        data, pad, crop and flip for CIFAR-10; `preprocessing.example_fn`).
      crop_flip: ImageNet-format training images are randomly cropped and flipped.
      parallelism, buffer_size, shift_ratio, seed: RecordInput settings (`record_input.read`).
      staged: software-pipeline the stages (True) or run them in sequence.
      skip_corrupt: skip and count corrupt records instead of failing.
      group_size: steps read and preprocessed at once (staged only).
      deterministic: read through a seeded tf.data reader instead of RecordInput, so that
        every run of one seed sees the same batches (see the module docstring); shift_ratio
        and parallelism then do not apply.
      data_name: the data set's name; 'cifar10' selects the CIFAR-10 preprocessing
        (`preprocessing.example_fn`).
    Raises:
      record_input.InputFilesError: the pattern cannot feed a reader, or (skip_corrupt) a file
        is cut short (checked at once).
    """

    def __init__(self, file_pattern, batch_size, image_size, num_classes, train=True,
                 data_format='NHWC', dtype=tf.float32, distortions=False, crop_flip=True,
                 parallelism=16, buffer_size=10000, shift_ratio=0.0, seed=301, staged=True,
                 skip_corrupt=False, data_name=None, group_size=1, deterministic=False):
        self.files = record_input.list_files(file_pattern)
        if skip_corrupt:
            # A cut-short file would fail every step once a reader reaches it: refuse it now
            # rather than promise a skip that cannot happen.
            record_input.check_whole(self.files)
        self._pattern = file_pattern
        self._batch_size = batch_size
        self._example_fn = preprocessing.example_fn(image_size, num_classes, train,
                                                    distortions, crop_flip, data_format, dtype,
                                                    data_name)
        self._reader = dict(parallelism=parallelism, buffer_size=buffer_size,
                            shift_ratio=shift_ratio, seed=seed)
        self._staged = staged
        self._skip_corrupt = skip_corrupt
        self._group_size = group_size
        self._deterministic = deterministic

    def _preprocess(self, records, num_batches):
        """Per-record ops, then one parallel_stack per batch; returns [(images, labels)]."""
        examples, valid = [], []
        for i, record in enumerate(batching.split(records)):
            with tf.name_scope('record_%d' % i):
                if self._skip_corrupt:
                    example, ok = preprocessing.with_validity(self._example_fn, record)
                    valid.append(ok)
                else:
                    example = self._example_fn(record)
                examples.append(example)
        batches = batching.stack_towers(examples, num_batches)
        if not self._skip_corrupt:
            return batches
        counter = preprocessing.skipped_records_counter()
        valid = tf.reshape(tf.stack(valid), [num_batches, self._batch_size])
        count = counter.assign_add(tf.reduce_sum(tf.cast(tf.logical_not(valid), tf.int64)))
        with tf.control_dependencies([count]):
            return [fill_invalid(batch, valid[b]) for b, batch in enumerate(batches)]

    def _read(self, count):
        """Stage A: `count` serialized records, from RecordInput or (deterministic) a seeded
        tf.data reader."""
        if not self._deterministic:
            return record_input.read(self._pattern, count, **self._reader)
        records = datasets.shuffled_records(self.files, self._reader['seed'],
                                            self._reader['buffer_size'])
        batch = tf.data.make_one_shot_iterator(records.batch(count, drop_remainder=True))
        return batch.get_next()

    def chain(self, topology):
        """Builds the stages for `topology`; returns the `software_pipeline.Chain`, whose
        `sizes` show what S1 and each tower's S2 hold (e.g. while warming up by hand)."""
        host, num_towers, group = topology.input_device, topology.num_towers, self._group_size

        def read():
            with tf.device(host), tf.name_scope(scopes.INPUT):
                records = self._read(self._batch_size * num_towers * group)
            return [software_pipeline.Group(host, records)]

        def preprocess(nests):
            with tf.device(host), tf.name_scope(scopes.PREPROCESS):
                # batches[s * num_towers + t]: step s of the group, tower t.
                batches = self._preprocess(nests[0], num_towers * group)
            return [software_pipeline.Group(
                device, batches[t] if group == 1 else batches[t::num_towers])
                    for t, device in enumerate(topology.tower_devices)]

        return software_pipeline.chain([read, preprocess], staged=self._staged, name='records',
                                       group_size=group)

    def tower_batches(self, topology):
        """See base class: two warm-up prefixes when staged, none otherwise."""
        chain = self.chain(topology)
        return base.InputBatches(batches=[tuple(b) for b in chain.outputs],
                                 put_ops=chain.put_ops, warmup_ops=chain.warmup_ops)

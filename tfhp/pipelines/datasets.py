"""The tf.data input pipeline, with the same records and preprocessing as `records.py`.

  list files -> parallel interleave of TFRecord files -> shuffle + repeat (fused)
  -> map (parse + preprocess, parallel calls) + batch (fused) -> prefetch -> device

tf.data runs these stages on its own threads (a private pool of `num_private_threads` when
set), so input overlaps compute without a staging area on the host. The last hop differs by
tower count: one tower on another device gets `prefetch_to_device` (one on the host needs no
copy); several towers each get a staging area on their device, fed from the host iterator
(one warm-up prefix). With `staged=False` there is no
prefetch at all: each step pulls its batches from the iterator and copies them as it goes.

Epochs: files are reshuffled and records shuffled within an epoch, never across, so every
record of an epoch is read exactly once before the next epoch starts. With `train=False` the
order is the files' order and records are not shuffled. `use_caching` keeps the first epoch's
records (still encoded) in memory and replays them, reshuffled, in every later epoch: no file
is read again. `repeat_cached_sample` reads one record and repeats it forever (the reference
benchmarks' way to time everything after the read at memory speed).

Determinism (`deterministic=True`, --deterministic): the interleave keeps its files' order, the
map runs one element at a time (its random crops and flips are stateful ops, which parallel
calls would draw from in the order threads reach them) and several towers take their batches
from the iterator one after another, so a seed fixes the data order and every augmentation.
`shuffled_records` is also the read stage of the RecordInput pipeline when it must repeat.

Skipping corrupt records (`skip_corrupt=True`): an element whose preprocessing fails is
dropped, and a running count travels with the elements to the step, which stores it in a
local variable of the `preprocessing.SKIPPED_RECORDS` collection; MAX_CORRUPT_IN_A_ROW corrupt
records in a row fail the step rather than search forever. Broken TFRecord framing (a file cut
short, a checksum that does not match) ends that file's records: the rest of the file counts as
one skipped record (no reader can find the records after the break).
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import record_input
from tfhp.ops import scopes
from tfhp.pipelines import base
from tfhp.pipelines import preprocessing
from tfhp.pipelines import software_pipeline

AUTOTUNE = tf.data.experimental.AUTOTUNE
SHUFFLE_BUFFER_SIZE = 10000
# Files read at once by the interleave; the reference benchmarks use 10.
INTERLEAVE_CYCLE_LENGTH = 10
# Skipping gives up after this many corrupt records in a row (see _count_invalid).
MAX_CORRUPT_IN_A_ROW = 1000


class DatasetPipeline(base.Pipeline):
    """Images and labels from TFRecord files in the ImageNet format, through tf.data.

    Args:
      file_pattern, batch_size, image_size, num_classes, train, data_format, dtype,
        distortions, crop_flip, staged, skip_corrupt, data_name: as for
        `records.RecordsPipeline`.
      num_private_threads: size of a thread pool private to this pipeline (0: TF's shared
        pool).
      prefetch_buffer_size: batches prefetched on the host (when staged).
      shuffle_buffer_size: records in the shuffle buffer (training).
      seed: seed of the file and record shuffles.
      use_caching: keep the records in memory after the first epoch.
      repeat_cached_sample: repeat the first record forever.
      deterministic: the same batches, in the same order, every run of one seed (see the
        module docstring); slower: the map is sequential.
    Raises:
      record_input.InputFilesError: the pattern cannot feed a reader (checked at once).
    """

    def __init__(self, file_pattern, batch_size, image_size, num_classes, train=True,
                 data_format='NHWC', dtype=tf.float32, distortions=False, crop_flip=True,
                 num_private_threads=0, prefetch_buffer_size=1,
                 shuffle_buffer_size=SHUFFLE_BUFFER_SIZE, seed=301, staged=True,
                 skip_corrupt=False, data_name=None, use_caching=False,
                 repeat_cached_sample=False, deterministic=False):
        self.files = record_input.list_files(file_pattern, keep_broken=skip_corrupt)
        self._pattern = file_pattern
        self._batch_size = batch_size
        self._example_fn = preprocessing.example_fn(image_size, num_classes, train,
                                                    distortions, crop_flip, data_format, dtype,
                                                    data_name)
        self._train = train
        self._num_private_threads = num_private_threads
        self._prefetch = prefetch_buffer_size
        self._shuffle_buffer_size = shuffle_buffer_size
        self._seed = seed
        self._staged = staged
        self._skip_corrupt = skip_corrupt
        self._use_caching = use_caching
        self._repeat_cached_sample = repeat_cached_sample
        self._deterministic = deterministic

    def records(self):
        """The serialized records, epoch after epoch (shuffled when training).

        When skipping corrupt records, (record, framed) pairs instead: see `_framed_records`.
        """
        if self._skip_corrupt:
            sizes = [tf.io.gfile.stat(path).length for path in self.files]
            files = tf.data.Dataset.from_tensor_slices((self.files, tf.constant(sizes, tf.int64)))
            read = _framed_records
        else:
            files = tf.data.Dataset.from_tensor_slices(self.files)
            read = tf.data.TFRecordDataset
        if self._train:
            # As Dataset.list_files(shuffle=True) does: the sorted names, reshuffled each epoch.
            files = files.shuffle(len(self.files), seed=self._seed)
        records = files.interleave(
            read, cycle_length=min(len(self.files), INTERLEAVE_CYCLE_LENGTH),
            num_parallel_calls=AUTOTUNE, deterministic=self._deterministic or not self._train)
        if self._repeat_cached_sample:
            return records.take(1).cache().repeat()
        if self._use_caching:
            records = records.cache()
        if self._train:
            records = records.shuffle(self._shuffle_buffer_size, seed=self._seed)
        return records.repeat()

    def dataset(self):
        """Batches of (images, labels), plus the running count of skipped records when
        skipping, prefetched on the host when staged."""
        examples = self.records()
        parallel = AUTOTUNE if self._staged and not self._deterministic else None
        if self._skip_corrupt:
            def validated(record, framed):
                example, valid = preprocessing.with_validity(self._example_fn, record)
                return example, tf.logical_and(valid, framed)
            examples = examples.map(validated, num_parallel_calls=parallel)
            examples = examples.scan((tf.constant(0, tf.int64), tf.constant(0, tf.int64)),
                                     _count_invalid)
            examples = examples.filter(lambda example, valid, skipped: valid)
            examples = examples.map(lambda example, valid, skipped: example + (skipped,))
        else:
            examples = examples.map(self._example_fn, num_parallel_calls=parallel)
        batches = examples.batch(self._batch_size, drop_remainder=True)
        if self._staged:
            batches = batches.prefetch(self._prefetch)
        options = tf.data.Options()
        options.experimental_optimization.map_and_batch_fusion = True
        options.experimental_optimization.shuffle_and_repeat_fusion = True
        if self._num_private_threads:
            options.threading.private_threadpool_size = self._num_private_threads
        return batches.with_options(options)

    def _next_batch(self, iterator, counter):
        """(images, labels) from the iterator; records the skipped count when skipping."""
        batch = iterator.get_next()
        if not self._skip_corrupt:
            return batch
        images, labels, skipped = batch
        record = counter.assign(tf.maximum(counter, tf.reduce_max(skipped)))
        with tf.control_dependencies([record]):
            return images, tf.identity(labels)

    def chain(self, topology):
        """Builds the iterator and device stage for `topology`; returns a
        `software_pipeline.Chain` (without buffers when prefetch_to_device does the copy)."""
        host, towers = topology.input_device, topology.tower_devices
        counter = preprocessing.skipped_records_counter() if self._skip_corrupt else None
        dataset = self.dataset()
        if self._staged and len(towers) == 1:
            with tf.device(towers[0]), tf.name_scope(scopes.INPUT):
                # The host prefetch already delivers to a tower on the host itself.
                if tf.DeviceSpec.from_string(towers[0]) != tf.DeviceSpec.from_string(host):
                    dataset = dataset.apply(
                        tf.data.experimental.prefetch_to_device(towers[0]))
                batch = self._next_batch(tf.data.make_one_shot_iterator(dataset), counter)
            return software_pipeline.Chain(outputs=[batch], put_ops=[], warmup_ops=[],
                                           drain_ops=[], sizes=[], names=[],
                                           clear_op=tf.no_op())
        with tf.device(host), tf.name_scope(scopes.INPUT):
            iterator = tf.data.make_one_shot_iterator(dataset)

        def read():
            with tf.device(host), tf.name_scope(scopes.INPUT):
                groups = []
                for device in towers:
                    # Deterministic: tower t's batch is the t-th taken, not the first one ready.
                    after = [groups[-1].tensors[0]] if groups and self._deterministic else []
                    with tf.control_dependencies(after):
                        groups.append(software_pipeline.Group(
                            device, self._next_batch(iterator, counter)))
                return groups

        return software_pipeline.chain([read], staged=self._staged, name='datasets')

    def tower_batches(self, topology):
        """See base class: one warm-up prefix when staged on several towers, else none."""
        chain = self.chain(topology)
        return base.InputBatches(batches=[tuple(b) for b in chain.outputs],
                                 put_ops=chain.put_ops, warmup_ops=chain.warmup_ops)


def shuffled_records(files, seed, shuffle_buffer_size):
    """Serialized records of `files`, epoch after epoch, in an order that `seed` fixes: the
    files reshuffled each epoch, read INTERLEAVE_CYCLE_LENGTH at a time in a fixed order, the
    records shuffled within an epoch through `shuffle_buffer_size` of them."""
    names = tf.data.Dataset.from_tensor_slices(files).shuffle(len(files), seed=seed)
    records = names.interleave(tf.data.TFRecordDataset,
                               cycle_length=min(len(files), INTERLEAVE_CYCLE_LENGTH),
                               num_parallel_calls=AUTOTUNE, deterministic=True)
    return records.shuffle(shuffle_buffer_size, seed=seed).repeat()


def _framed_records(filename, size):
    """One file's records as (record, True) pairs, then (b'', False) if its framing broke.

    The reader stops at a record it cannot frame: with DataLossError where the data or a
    checksum is cut or wrong (dropped by ignore_errors, which ends the file there: measured,
    TF 2.21), silently where a header is cut. Either way the records read span fewer than the
    file's `size` bytes, and the one (b'', False) element stands for the rest of the file.
    """
    records = tf.data.TFRecordDataset(filename).ignore_errors()
    end = tf.data.Dataset.from_tensors((tf.constant(b''), tf.constant(False)))
    marked = records.map(lambda record: (record, tf.constant(True))).concatenate(end)

    def count_bytes(read, element):
        record, is_record = element
        on_disk = tf.cast(tf.strings.length(record), tf.int64) + record_input.RECORD_OVERHEAD
        read += tf.cast(is_record, tf.int64) * on_disk
        return read, (record, is_record, read)

    counted = marked.scan(tf.constant(0, tf.int64), count_bytes)
    counted = counted.filter(
        lambda record, is_record, read: tf.logical_or(is_record, read < size))
    return counted.map(lambda record, is_record, read: (record, is_record))


def _count_invalid(state, element):
    """scan step: carries the number of invalid elements so far alongside each element.

    Fails when MAX_CORRUPT_IN_A_ROW records in a row are invalid: a data set that is all
    corrupt would otherwise make the filter after it search forever.
    """
    skipped, in_a_row = state
    example, valid = element
    invalid = tf.cast(tf.logical_not(valid), tf.int64)
    in_a_row = (in_a_row + 1) * invalid
    check = tf.debugging.Assert(in_a_row < MAX_CORRUPT_IN_A_ROW, [
        'skipped %d corrupt records in a row; `python -m tfhp.data check` names them'
        % MAX_CORRUPT_IN_A_ROW])
    with tf.control_dependencies([check]):
        skipped = skipped + invalid
    return (skipped, in_a_row), (example, valid, skipped)

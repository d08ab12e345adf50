"""RecordInput: batches of shuffled serialized records read by a pool of C++ threads.

`read` wraps TensorFlow's RecordInput op. Its reader threads (`parallelism` of them) stream the
files matching a pattern into a shuffle buffer of `buffer_size` records, epoch after epoch, and
each run of the op takes `batch_size` records out of it. It never signals an end of data.

The op trusts its files: on a pattern that matches nothing it fails, but when every matched
file is empty or truncated its readers find no record and it waits forever (measured with
TensorFlow 2.21; no session timeout interrupts it). `list_files` checks the files first, so
build a reader only on the files it accepted.

A file cut short (measured, TF 2.21, every TFRecord reader alike): cut inside a record's data or
checksums, the reader fails with DataLossError 'truncated record at <offset>', naming no file;
RecordInput fails so once its reader reaches the cut, typically when the shuffle buffer first
fills, and on every run after that (it does not hang and cannot skip it). Cut inside a record's
12-byte header, every reader stops there silently, as at the end of the file. `complete_records`
finds either cut by walking the record headers, and `check_whole` refuses such files.

`shift_ratio` starts every reader `shift_ratio * num_files` files further into the (shuffled)
file list: workers of one cluster that read the same pattern give it task/num_workers so they
do not read the same files at the same time.
"""
import os
import struct

import tensorflow.compat.v1 as tf

# TFRecord framing: uint64 length, uint32 checksum of the length, data, uint32 checksum of data.
HEADER_BYTES = 12
RECORD_OVERHEAD = HEADER_BYTES + 4


class InputFilesError(ValueError):
    """The files of an input pattern cannot feed a reader; the message names them."""


def list_files(pattern, keep_broken=False):
    """The sorted files matching `pattern`, after checking that a reader can use them.

    Every file's first record is read: a file that is not a TFRecord file, or that has bytes
    but no complete record, is refused (unless `keep_broken`), as is a pattern whose files hold
    no record at all.

    Args:
      pattern: a glob, e.g. '/data/imagenet/train-*-of-*'.
      keep_broken: keep files whose first record is broken, for a pipeline that skips them
        (tf.data can; RecordInput cannot).
    Returns:
      The matching file names, sorted.
    Raises:
      InputFilesError: the directory is missing, nothing matches, or a file is unusable.
    """
    directory = os.path.dirname(pattern) or '.'
    if not tf.io.gfile.isdir(directory):
        raise InputFilesError('directory %s does not exist' % directory)
    files = sorted(tf.io.gfile.glob(pattern))
    if not files:
        raise InputFilesError('no file matches %s' % pattern)
    with_records = 0
    for path in files:
        try:
            next(tf.io.tf_record_iterator(path))
            with_records += 1
        except StopIteration:
            if tf.io.gfile.stat(path).length and not keep_broken:
                raise InputFilesError('%s: %d bytes but no complete record (truncated?)'
                                      % (path, tf.io.gfile.stat(path).length)) from None
        except tf.errors.DataLossError as e:
            if not keep_broken:
                raise InputFilesError('%s: not a TFRecord file, or cut short before its first '
                                      'record ends (%s)' % (path, e.message)) from None
    if not with_records:
        raise InputFilesError('the %d file(s) matching %s hold no record' % (len(files), pattern))
    return files


def _open_for_walk(path):
    # Perf: unbuffered, so that each header costs one 8-byte read; a 100 MB file of 100 KB
    # records is walked reading 8 KB (gfile's buffered reader: 87 MB, 13x slower). Paths of
    # other file systems (gs://...) need gfile.
    if '://' in path:
        return tf.io.gfile.GFile(path, 'rb')
    return open(path, 'rb', buffering=0)


def complete_records(path):
    """Walks the record headers of a TFRecord file without reading the records' data.

    Checksums are not verified: this finds where the framing ends, not corrupt bytes.

    Args:
      path: a TFRecord file.
    Returns:
      (count, end): the number of complete records, and the byte at which the last of them
      ends; the file is cut short if `end` is not its size.
    """
    size = tf.io.gfile.stat(path).length
    count = end = 0
    with _open_for_walk(path) as f:
        while end + HEADER_BYTES <= size:
            f.seek(end)
            length, = struct.unpack('<Q', f.read(8))
            if end + RECORD_OVERHEAD + length > size:
                break
            end += RECORD_OVERHEAD + length
            count += 1
    return count, end


def check_whole(files):
    """Refuses a file cut short, which a RecordInput reader can neither read past nor skip.

    Args:
      files: TFRecord file names (from `list_files`).
    Raises:
      InputFilesError: naming the first file that does not end where its last complete
        record ends.
    """
    for path in files:
        count, end = complete_records(path)
        size = tf.io.gfile.stat(path).length
        if end != size:
            raise InputFilesError(
                '%s is cut short: its %d complete record(s) end at byte %d of %d; RecordInput '
                'cannot skip the rest (the tf.data pipeline skips and counts it)'
                % (path, count, end, size))


def read(pattern, batch_size, parallelism=16, buffer_size=10000, shift_ratio=0.0, seed=301,
         name='record_input'):
    """Builds a RecordInput op: each run returns `batch_size` serialized records.

    Args:
      pattern: file glob; check it with `list_files` first.
      batch_size: records per run.
      parallelism: reader threads.
      buffer_size: records in the shuffle buffer (the randomness of the order).
      shift_ratio: fraction of the file list each reader skips at the start, in [0, 1).
      seed: seed of the file order and of the buffer's shuffling.
      name: op name.
    Returns:
      A string tensor of shape [batch_size].
    Raises:
      ValueError: a count is not positive or shift_ratio is outside [0, 1).
    """
    if min(batch_size, parallelism, buffer_size) < 1:
        raise ValueError('RecordInput needs batch_size, parallelism and buffer_size >= 1, got '
                         '%d, %d, %d' % (batch_size, parallelism, buffer_size))
    if not 0.0 <= shift_ratio < 1.0:
        raise ValueError('RecordInput shift_ratio must be in [0, 1), got %s' % shift_ratio)
    records = tf.raw_ops.RecordInput(
        file_pattern=pattern, file_random_seed=seed, file_shuffle_shift_ratio=shift_ratio,
        file_buffer_size=buffer_size, file_parallelism=parallelism, batch_size=batch_size,
        name=name)
    records.set_shape([batch_size])
    return records

"""RecordInput: whole epochs delivered, one file is enough, and unusable files are refused
before a reader that would hang is built."""
import collections
import os
import threading

import pytest
import tensorflow.compat.v1 as tf

from tfhp.ops import record_input


def _write(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for r in records:
            writer.write(r)


@pytest.fixture(name='two_files')
def _two_files(tmp_path):
    for s in range(2):
        _write(tmp_path / ('train-%05d-of-00002' % s), [b'%d-%d' % (s, i) for i in range(5)])
    return str(tmp_path / 'train-*-of-*')


@pytest.mark.parametrize('parallelism, buffer_size, batch_size', [(1, 100, 10), (4, 3, 4)])
def test_every_epoch_delivers_each_record_once(two_files, parallelism, buffer_size,
                                               batch_size):
    assert len(record_input.list_files(two_files)) == 2
    with tf.Graph().as_default():
        records = record_input.read(two_files, batch_size, parallelism=parallelism,
                                    buffer_size=buffer_size, seed=7)
        assert records.shape.as_list() == [batch_size]
        with tf.Session() as sess:
            seen = [r for _ in range(40 // batch_size) for r in sess.run(records)]
    expected = {b'%d-%d' % (s, i) for s in range(2) for i in range(5)}
    # RecordInput finishes an epoch before it starts the next: each block of 10 is a permutation.
    for start in range(0, 40, 10):
        assert collections.Counter(seen[start:start + 10]) == {r: 1 for r in expected}


def test_one_file_with_more_readers_than_files(tmp_path):
    _write(tmp_path / 'train-00000-of-00001', [b'a', b'b', b'c'])
    pattern = str(tmp_path / 'train-*')
    record_input.list_files(pattern)
    with tf.Graph().as_default():
        records = record_input.read(pattern, 6, parallelism=8, buffer_size=16)
        with tf.Session() as sess:
            assert sorted(sess.run(records)) == [b'a', b'a', b'b', b'b', b'c', b'c']


def test_empty_files_beside_a_good_one_are_accepted(tmp_path):
    _write(tmp_path / 'train-00000-of-00002', [b'a'])
    (tmp_path / 'train-00001-of-00002').write_bytes(b'')
    assert len(record_input.list_files(str(tmp_path / 'train-*'))) == 2


@pytest.mark.parametrize('files, message', [
    ({}, 'no file matches .*train-\\*'),
    ({'train-0': b''}, 'the 1 file\\(s\\) matching .*train-\\* hold no record'),
    ({'train-0': b'abcde'}, 'train-0: 5 bytes but no complete record'),
    ({'train-0': b'not a record file at all'}, 'train-0: not a TFRecord file'),
])
def test_unusable_patterns_are_refused_naming_the_file(tmp_path, files, message):
    for name, content in files.items():
        (tmp_path / name).write_bytes(content)
    with pytest.raises(record_input.InputFilesError, match=message):
        record_input.list_files(str(tmp_path / 'train-*'))


def test_missing_directory_is_named(tmp_path):
    missing = os.path.join(str(tmp_path), 'nowhere')
    with pytest.raises(record_input.InputFilesError, match='directory .*nowhere does not exist'):
        record_input.list_files(os.path.join(missing, 'train-*'))


def test_bad_arguments_are_refused():
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match='shift_ratio'):
            record_input.read('x-*', 4, shift_ratio=1.0)
        with pytest.raises(ValueError, match='>= 1'):
            record_input.read('x-*', 0)


@pytest.fixture(name='cut_short')
def _cut_short(tmp_path):
    """train-0: records of 100 bytes, '0'..'3' whole, then 3 more files cut in the 5th."""
    _write(tmp_path / 'train-0', [b'%d' % i * 100 for i in range(5)])
    whole = (tmp_path / 'train-0').read_bytes()
    # 116 bytes a record: 12 of header, 100 of data, 4 of data checksum.
    for name, keep in (('cut_in_data', 4 * 116 + 60), ('cut_in_header', 4 * 116 + 5),
                       ('cut_in_checksum', 5 * 116 - 2)):
        (tmp_path / name).write_bytes(whole[:keep])
    return tmp_path


def test_complete_records_walks_headers_to_the_cut(cut_short):
    assert record_input.complete_records(str(cut_short / 'train-0')) == (5, 5 * 116)
    for name in ('cut_in_data', 'cut_in_header', 'cut_in_checksum'):
        assert record_input.complete_records(str(cut_short / name)) == (4, 4 * 116), name
    record_input.check_whole([str(cut_short / 'train-0')])
    with pytest.raises(record_input.InputFilesError, match='cut_in_header is cut short: its 4 '
                       r'complete record\(s\) end at byte 464 of 469'):
        record_input.check_whole([str(cut_short / 'train-0'), str(cut_short / 'cut_in_header')])


def test_record_input_fails_for_good_at_a_cut_in_a_records_data(cut_short):
    # Measured, not assumed: the op neither hangs nor skips; the error names no file. Each run
    # is bounded by a thread join, since a session timeout cannot interrupt RecordInput.
    pattern = str(cut_short / 'cut_in_data')
    with tf.Graph().as_default():
        records = record_input.read(pattern, 2, parallelism=1, buffer_size=100)
        with tf.Session() as sess:
            for _ in range(2):
                outcome = []
                thread = threading.Thread(target=lambda: _run_into(outcome, sess, records),
                                          daemon=True)
                thread.start()
                thread.join(30)
                assert outcome and isinstance(outcome[0], tf.errors.DataLossError)
                assert 'truncated record at 464' in outcome[0].message
                assert 'cut_in_data' not in outcome[0].message


def _run_into(outcome, sess, fetch):
    try:
        outcome.append(sess.run(fetch))
    except tf.errors.OpError as e:
        outcome.append(e)


def test_broken_files_can_be_kept_for_a_pipeline_that_skips_them(tmp_path):
    _write(tmp_path / 'train-0', [b'a'])
    (tmp_path / 'train-1').write_bytes(b'not a record file at all')
    (tmp_path / 'train-2').write_bytes(b'abcde')
    assert len(record_input.list_files(str(tmp_path / 'train-*'), keep_broken=True)) == 3
    with pytest.raises(record_input.InputFilesError, match='hold no record'):
        record_input.list_files(str(tmp_path / 'train-[12]'), keep_broken=True)

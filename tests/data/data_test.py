"""Data-set writers and the corrupt-record checker, on tiny data sets in temp directories."""
import collections
import os
import subprocess
import sys

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp.data import check
from tfhp.data import codec as codec_lib
from tfhp.data import digits
from tfhp.data import folder
from tfhp.data import info as info_lib
from tfhp.data import synthetic
from tfhp.pipelines import example_format

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _examples(directory, subset):
    files = sorted(tf.io.gfile.glob(example_format.shard_pattern(directory, subset)))
    return files, [tf.train.Example.FromString(r) for f in files
                   for r in tf.io.tf_record_iterator(f)]


def _feature(example, key):
    feature = example.features.feature[key]
    return (feature.int64_list.value or feature.bytes_list.value or feature.float_list.value)


def test_synthetic_data_set_is_balanced_sharded_and_clean(tmp_path):
    info = synthetic.generate(str(tmp_path), num_classes=5, image_size=16, train_examples=20,
                              validation_examples=10, train_shards=3, validation_shards=2)
    assert info_lib.load(str(tmp_path)) == info
    assert info.num_examples == {'train': 20, 'validation': 10}
    files, examples = _examples(str(tmp_path), 'train')
    assert [os.path.basename(f) for f in files] == ['train-%05d-of-00003' % s for s in range(3)]
    labels = [_feature(e, example_format.LABEL)[0] for e in examples]
    assert collections.Counter(labels) == {k: 4 for k in range(5)}
    # Shards mix the classes (the order is shuffled before sharding).
    assert len(set(labels[:7])) > 1
    first = examples[0]
    assert _feature(first, example_format.HEIGHT)[0] == 16
    ymin, xmin, ymax, xmax = (_feature(first, k)[0] for k in example_format.BOX_KEYS)
    assert 0.0 <= ymin < ymax <= 1.0 and 0.0 <= xmin < xmax <= 1.0
    assert check.scan(files, 5) == (20, [])


def test_synthetic_classes_differ_and_are_reproducible():
    # Mean colour inside the box tells hue classes apart; the same seed draws the same image.
    a1, _ = synthetic.draw(0, 12, 32, np.random.default_rng(3))
    a2, _ = synthetic.draw(0, 12, 32, np.random.default_rng(3))
    np.testing.assert_array_equal(a1, a2)
    hues = []
    for label in range(3):  # 12 classes: 3 hues x 4 shapes
        pixels, box = synthetic.draw(label, 12, 64, np.random.default_rng(label))
        y0, x0, y1, x1 = (int(round(v * 64)) for v in box)
        rgb = pixels[(y0 + y1) // 2, (x0 + x1) // 2].astype(float)  # a disc's centre
        hues.append(int(np.argmax(rgb)))
    assert sorted(hues) == [0, 1, 2]  # red-, green- and blue-dominated discs


def test_folder_converter_keeps_jpegs_and_converts_pngs(tmp_path):
    source = tmp_path / 'pets'
    rng = np.random.default_rng(0)
    with codec_lib.JpegCodec() as codec:
        for name in ('cat', 'dog'):
            (source / name).mkdir(parents=True)
            for i in range(5):
                pixels = rng.integers(0, 255, [12 + i, 10, 3], dtype=np.uint8)
                (source / name / ('%d.jpg' % i)).write_bytes(codec.encode(pixels))
        with tf.Graph().as_default(), tf.Session() as sess:
            png = sess.run(tf.image.encode_png(np.zeros([6, 7, 3], np.uint8)))
        (source / 'dog' / 'extra.png').write_bytes(png)
        (source / 'dog' / 'notes.txt').write_text('ignored')
    out = str(tmp_path / 'out')
    info = folder.convert(str(source), out, validation_fraction=0.2, train_shards=2,
                          validation_shards=1)
    assert info.class_names == ('cat', 'dog')
    assert info.num_examples == {'train': 9, 'validation': 2}  # round(0.2 * 5), round(0.2 * 6)
    _, examples = _examples(out, 'train')
    _, validation = _examples(out, 'validation')
    sizes = {(_feature(e, example_format.TEXT)[0], _feature(e, example_format.HEIGHT)[0],
              _feature(e, example_format.WIDTH)[0]) for e in examples + validation}
    assert (b'dog', 6, 7) in sizes and len(sizes) == 11
    assert all(codec_lib.is_jpeg(_feature(e, example_format.ENCODED)[0])
               for e in examples + validation)


def test_folder_converter_names_a_file_that_is_not_an_image(tmp_path):
    (tmp_path / 'a').mkdir()
    (tmp_path / 'a' / 'broken.jpg').write_bytes(b'this is text')
    with pytest.raises(ValueError, match='broken.jpg: not an image'):
        folder.convert(str(tmp_path), str(tmp_path / 'out'), validation_fraction=0.0,
                       train_shards=1, validation_shards=1)


def _write_records(path, records):
    with tf.io.TFRecordWriter(str(path)) as writer:
        for r in records:
            writer.write(r)


def test_checker_names_file_and_index_of_each_corrupt_record(tmp_path):
    with codec_lib.JpegCodec() as codec:
        jpeg = codec.encode(np.zeros([4, 4, 3], np.uint8))
    good = example_format.make_example(jpeg, 1, 4, 4).SerializeToString()
    records = [good,
               b'\x01\x02 not a protocol buffer',
               example_format.make_example(b'GIF89a....', 1, 4, 4).SerializeToString(),
               example_format.make_example(jpeg, 7, 4, 4).SerializeToString(),
               example_format.make_example(jpeg[:len(jpeg) // 2] + b'\x00' * 8, 0, 4,
                                           4).SerializeToString(),
               good]
    path = tmp_path / 'train-00000-of-00002'
    _write_records(path, records)
    framing = tmp_path / 'train-00001-of-00002'
    _write_records(framing, [good, good])
    data = bytearray(framing.read_bytes())
    data[-5] ^= 0xFF  # the second record's payload no longer matches its checksum
    framing.write_bytes(bytes(data))
    count, problems = check.scan([str(path), str(framing)], num_classes=5)
    assert count == 7
    assert [(os.path.basename(p.path), p.index) for p in problems] == [
        ('train-00000-of-00002', 1), ('train-00000-of-00002', 2), ('train-00000-of-00002', 3),
        ('train-00000-of-00002', 4), ('train-00001-of-00002', 1)]
    reasons = [p.reason for p in problems]
    assert reasons[0] == 'not a tf.train.Example'
    assert reasons[1] == 'image/encoded bytes are not a JPEG image'
    assert reasons[2] == 'label 7 out of range [0, 5)'
    assert reasons[3].startswith('the JPEG does not decode')
    assert reasons[4].startswith('corrupt TFRecord framing')
    assert check.first_problem([str(path)], 5) == problems[0]
    # Framing alone: the content problems of the first file are not looked for.
    assert check.first_problem([str(path), str(framing)], 5, framing_only=True) == problems[4]
    assert [check.is_framing(p) for p in problems] == [False] * 4 + [True]


def test_checker_names_a_file_cut_inside_a_header_which_readers_take_for_its_end(tmp_path):
    path = tmp_path / 'train-00000-of-00001'
    _write_records(path, [b'a' * 10, b'b' * 10])
    path.write_bytes(path.read_bytes()[:26 + 5])  # the second record's header cut after 5 bytes
    assert len(list(tf.io.tf_record_iterator(str(path)))) == 1  # no error from the reader
    count, problems = check.scan([str(path)], num_classes=5, framing_only=True)
    assert count == 1
    assert problems == [check.Problem(str(path), 1, 'corrupt TFRecord framing (cut short: 5 '
                                      'byte(s) after the last complete record)')]


def test_digits_converter_writes_upscaled_real_digits(tmp_path):
    pytest.importorskip('sklearn')
    info = digits.convert(str(tmp_path), image_size=16, train_shards=2, validation_shards=1)
    assert info.num_examples == {'train': 1438, 'validation': 359}
    _, examples = _examples(str(tmp_path), 'validation')
    assert len(examples) == 359
    assert {_feature(e, example_format.LABEL)[0] for e in examples} == set(range(10))
    with codec_lib.JpegCodec() as codec:
        pixels = codec.decode(_feature(examples[0], example_format.ENCODED)[0])
    assert pixels.shape == (16, 16, 3)


def test_info_of_a_directory_without_one_is_imagenet(tmp_path):
    assert info_lib.load(str(tmp_path)) == info_lib.IMAGENET
    with pytest.raises(info_lib.DataSetError, match='no dataset_info.json'):
        info_lib.load(str(tmp_path), 'flowers')
    with pytest.raises(info_lib.DataSetError, match='does not exist'):
        info_lib.load(str(tmp_path / 'missing'))


def test_command_line_makes_and_checks_a_data_set(tmp_path):
    out = str(tmp_path / 'shapes')

    def run(*args):
        return subprocess.run([sys.executable, '-m', 'tfhp.data'] + list(args),
                              capture_output=True, text=True, timeout=120, cwd=ROOT)

    made = run('synthetic', '--output_dir=' + out, '--num_classes=3', '--image_size=8',
               '--train_examples=6', '--validation_examples=3', '--train_shards=2',
               '--validation_shards=1')
    assert made.returncode == 0, made.stderr
    checked = run('check', '--data_dir=' + out)
    assert checked.returncode == 0, checked.stderr
    assert 'train: 6 records read in 2 files, 0 corrupt' in checked.stdout

"""The command line: exit status, messages, and the flags reference (docs/flags.md) kept true."""
import os
import re
import subprocess
import sys

import pytest

from tfhp import cli

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*args):
    return subprocess.run([sys.executable, '-m', 'tfhp'] + list(args), capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


@pytest.mark.parametrize('args, message', [
    (['--model=nosuchnet'], '--model'),
    (['--batch_size=0'], '--batch_size'),
])
def test_bad_flags_exit_2_naming_the_flag(args, message):
    proc = _run(*args)
    assert proc.returncode == 2, proc.stderr
    assert message in proc.stderr
    assert 'Traceback' not in proc.stderr


def test_unwritable_train_dir_exits_2_before_building(tmp_path):
    not_a_dir = tmp_path / 'a_file'
    not_a_dir.write_text('kept')
    proc = _run('--train_dir=%s' % not_a_dir, '--num_batches=1')
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [
        'tfhp: error: --train_dir=%s: is a file, not a directory' % not_a_dir]
    assert 'Model:' not in proc.stdout  # refused before the graph was built
    assert not_a_dir.read_text() == 'kept'


def test_nchw_refusal_exits_2_naming_the_flag(monkeypatch, capsys):
    # In-process, so the NCHW probe can be faked: whether this CPU runs NCHW is not assumed.
    from tfhp import devices  # pylint: disable=g-import-not-at-top
    monkeypatch.setattr(devices, 'supports_nchw', lambda device: False)
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp', '--data_format=NCHW', '--model=lenet'])
    try:
        assert cli.main(['tfhp']) == 2
    finally:
        cli.FLAGS.unparse_flags()
    assert '--data_format=NCHW' in capsys.readouterr().err


def test_short_run_prints_total_images_per_sec(tmp_path):
    out = tmp_path / 'r.jsonl'
    proc = _run('--model=trivial', '--image_size=16', '--batch_size=4', '--num_batches=3',
                '--num_warmup_batches=1', '--result_file=%s' % out)
    assert proc.returncode == 0, proc.stderr
    match = re.search(r'total images/sec: ([0-9.]+)', proc.stdout)
    assert match and float(match.group(1)) > 0
    assert out.exists()


def test_flags_reference_lists_every_flag():
    with open(os.path.join(ROOT, 'docs', 'flags.md')) as f:
        reference = f.read()
    names = sorted(flag.name for flag in cli.FLAGS.get_flags_for_module(cli.__name__))
    assert len(names) > 30
    missing = [n for n in names if '`--%s`' % n not in reference]
    assert not missing, 'docs/flags.md flags table lacks: %s' % missing

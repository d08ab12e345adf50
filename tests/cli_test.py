"""The command line: exit status, messages, and the flags reference (docs/flags.md) kept true."""
import ast
import os
import re
import subprocess
import sys

import pytest

from tfhp import cli
from tfhp import cli_flags
from tfhp import flag_help

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
    from tfhp.runner import devices  # pylint: disable=g-import-not-at-top
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


def _help_groups():
    """[(title, [flag names])] as `tfhp --help` groups them, from the definitions."""
    return [(title, [f.name for f in group]) for title, group in flag_help.grouped(
        cli.FLAGS.get_flags_for_module(cli_flags.__name__), cli_flags.HELP_GROUPS,
        hidden=cli_flags.HIDDEN_FLAGS)]


def test_flags_reference_lists_every_flag_in_its_help_group():
    with open(os.path.join(ROOT, 'docs', 'flags.md')) as f:
        reference = f.read()
    reference = reference[:reference.index('## `tfhp.launch` options')]
    sections = re.findall(r'^## (.*)\n((?:.|\n)*?)(?=^## |\Z)', reference, re.M)
    documented = [(title, sorted(re.findall(r'^\| `--(\w+)`', body, re.M)))
                  for title, body in sections]
    expected = [(title, sorted(names)) for title, names in _help_groups()]
    assert sum(len(names) for _, names in expected) > 100
    assert documented == expected


# The console script runs cli.run_main with the script's name as the program.
_CONSOLE_SCRIPT = 'import sys; from tfhp import cli; sys.argv[0] = "tfhp"; cli.run_main()'


@pytest.mark.parametrize('command', [['-m', 'tfhp', '--help'], ['-m', 'tfhp', '-h'],
                                     ['-c', _CONSOLE_SCRIPT, '--help']])
def test_help_lists_the_commands_own_flags_in_groups(command):
    proc = subprocess.run([sys.executable] + command, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    listed, current = [], None
    for line in proc.stdout.splitlines():
        if re.match(r'[A-Z].*:$', line):
            current = (line[:-1], [])
            listed.append(current)
        elif line.startswith('  --'):
            current[1].append(line.split()[0][2:].replace('[no]', ''))
    assert listed == _help_groups()
    assert '  --model                         Model name (docs/training.md lists them). ' \
           'Default: trivial.' in proc.stdout.splitlines()
    assert max(len(line) for line in proc.stdout.splitlines()) <= 100


def test_helpfull_stays_absls_full_list():
    proc = _run('--helpfull')
    assert proc.returncode == 1  # absl's
    assert 'tfhp.cli_flags:' in proc.stdout and '--flagfile' in proc.stdout
    assert proc.stdout.count('--[no]fuse_batchnorm') == 1


@pytest.mark.parametrize('args, asks', [
    (['--model=lenet', '-?'], True), (['--helpshort'], True), (['--model=lenet'], False),
    (['--', '--help'], False),  # after --: an argument, not a flag
])
def test_asks_for_help(args, asks):
    assert flag_help.asks_for_help(args) is asks


# Runs a command's module as `python -m` does, then says at exit whether TensorFlow was imported.
_HELP_IMPORTS = ('import atexit, runpy, sys; '
                 'atexit.register(lambda: print("tensorflow imported:", "tensorflow" in '
                 'sys.modules)); sys.argv = [sys.argv[1], "--help"]; '
                 'runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)')


@pytest.mark.parametrize('module, first_flag', [
    ('tfhp', '--model'), ('tfhp.predict', '--profile'), ('tfhp.calibrate', '--model')])
def test_help_exits_0_without_importing_tensorflow(module, first_flag):
    proc = subprocess.run([sys.executable, '-c', _HELP_IMPORTS, module], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[-1] == 'tensorflow imported: False'
    assert [line.split()[0] for line in lines if line.startswith('  --')][0] == first_flag
    assert proc.stderr == ''


# Every other command: (its section of docs/flags.md, the module that defines its options).
# argparse commands are read from their --help; absl ones from their DEFINE_* calls.
_COMMANDS = [
    ('tfhp.launch', 'argparse'), ('tfhp.sweep', 'argparse'), ('tfhp.search', 'argparse'),
    ('tfhp.forkserver', 'argparse'), ('tfhp.diagnose', 'tfhp/diagnose.py'),
    ('tfhp.predict', 'tfhp/predict.py'), ('tfhp.calibrate', 'tfhp/calibrate.py'),
    ('tfhp.trace', 'tfhp/trace.py'), ('tfhp.kernels', 'tfhp/kernels.py'),
    ('tfhp.reconnect', 'tfhp/reconnect.py'), ('tfhp.ensemble', 'tfhp/ensemble/__main__.py'),
    ('tfhp.data', 'tfhp/data/__main__.py'),
]


def _defined_options(command, source):
    if source == 'argparse':
        proc = subprocess.run([sys.executable, '-m', command, '--help'], capture_output=True,
                              text=True, timeout=120, cwd=ROOT)
        assert proc.returncode == 0, proc.stderr
        return sorted(set(re.findall(r'^  --(\w+)', proc.stdout, re.M)) - {'help'})
    with open(os.path.join(ROOT, source)) as f:
        tree = ast.parse(f.read())
    return sorted(node.args[0].value for node in ast.walk(tree)
                  if isinstance(node, ast.Call) and ast.unparse(node.func).startswith(
                      'flags.DEFINE_') and isinstance(node.args[0], ast.Constant))


@pytest.mark.parametrize('command, source', _COMMANDS)
def test_flags_reference_lists_every_option_of_every_command(command, source):
    with open(os.path.join(ROOT, 'docs', 'flags.md')) as f:
        reference = f.read()
    section = re.search(r'^## `%s` options\n((?:.|\n)*?)(?=^## |\Z)' % re.escape(command),
                        reference, re.M)
    assert section, 'docs/flags.md has no section "## `%s` options"' % command
    documented = sorted(re.findall(r'^\| `--(\w+)`', section.group(1), re.M))
    defined = _defined_options(command, source)
    assert defined and documented == defined


def test_the_launchers_help_lists_at_most_18_options():
    proc = subprocess.run([sys.executable, '-m', 'tfhp.launch', '--help'], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert len(re.findall(r'^\s*--', proc.stdout, re.M)) <= 18, proc.stdout

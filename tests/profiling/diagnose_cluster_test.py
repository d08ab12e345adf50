"""`python -m tfhp.diagnose` in cluster mode: refusals before any job, and one real diagnosis.

The real one needs emulated links (root, network namespaces, tc) and is skipped, naming what is
missing, where the machine cannot make them. The arithmetic is tested in link_bound_test.py.
"""
import os
import subprocess
import sys

import pytest

from tests import testing
from tfhp import cli
from tfhp import diagnose
from tfhp.launcher import links

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SMALL = ['--model=trivial', '--image_size=8', '--batch_size=2', '--num_classes=10',
         '--weight_decay=0', '--display_every=1000', '--num_warmup_batches=1']


def _diagnose(*args, timeout=240):
    return subprocess.run([sys.executable, '-m', 'tfhp.diagnose'] + list(args),
                          capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                          env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))


def test_one_process_config_keeps_the_workers_compute_and_drops_the_cluster():
    cfg = testing.small_config(  # sections in this order: each must be valid as it comes
        cluster={'job_name': 'worker', 'ps_hosts': ('127.0.0.1:2000',),
                 'worker_hosts': ('127.0.0.1:3000', '127.0.0.1:3001')},
        device={'num_devices': 2},
        replication={'variable_update': 'distributed_replicated',
                     'gradient_transfer_dtype': 'bfloat16'},
        run={'result_file': '/tmp/never-written.jsonl'})
    single = diagnose.one_process_config(cfg)
    assert single.cluster.job_name == '' and single.device.num_devices == 2
    assert single.replication.variable_update == 'parameter_server'
    assert single.replication.gradient_transfer_dtype == 'float32'
    assert single.run.result_file is None


def _refusal(capsys, *args):
    """diagnose's exit status and its error line, in-process with these flags."""
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp.diagnose'] + list(args) + SMALL)
    try:
        status = diagnose.main(['tfhp.diagnose'])
    finally:
        cli.FLAGS.unparse_flags()
    return status, capsys.readouterr().err.strip()


def test_cluster_mode_refuses_what_cannot_work_before_any_job(capsys):
    assert _refusal(capsys, '--num_worker_tasks=2') == (
        2, 'tfhp.diagnose: error: --num_worker_tasks diagnoses a job on emulated links: give '
        '--link_bandwidth (e.g. 200mbit)')
    assert _refusal(capsys, '--num_worker_tasks=2', '--link_bandwidth=fast')[1].startswith(
        "tfhp.diagnose: error: 'fast' is not a rate")
    # The links are checked first, then worker 0's configuration; either way one line.
    status, error = _refusal(capsys, '--num_worker_tasks=2', '--link_bandwidth=200mbit',
                             '--variable_update=replicated')
    assert status == 2
    try:
        links.check_available()
    except links.LinksUnavailable as e:
        assert error == 'tfhp.diagnose: error: %s' % e
        return
    assert '--variable_update=replicated is in-graph' in error


@pytest.mark.cluster
def test_a_job_on_shaped_links_is_diagnosed_against_loopback_and_one_process():
    try:
        links.check_available()
    except links.LinksUnavailable as e:
        pytest.skip('this machine cannot emulate links: %s' % e)
    proc = _diagnose('--num_ps_tasks=1', '--num_worker_tasks=2', '--link_bandwidth=100mbit',
                     '--num_batches=4', *SMALL)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert [line.split()[0] for line in lines if line.startswith('  on ') or
            line.startswith('  one ')] == ['on', 'on', 'one']
    assert any(line.startswith('link exposure:') for line in lines)
    assert any(line.startswith('  ps 0 ') and '100 Mbit/s' in line for line in lines)
    # 49,355 float32 parameters (0.197 MB) to each of 2 workers from 1 ps at 100 Mbit: 31.6 ms
    # each way.
    assert 'per direction): >= 31.6 ms' in proc.stdout
    assert lines[-1].startswith('Bottleneck: ')

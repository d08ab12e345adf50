"""`python -m tfhp.diagnose` in cluster mode: refusals before any job, repeats and the cores'
warning with the jobs faked (no process starts), and one real diagnosis.

The real one needs emulated links (root, network namespaces, tc) and is skipped, naming what is
missing, where the machine cannot make them. The arithmetic is tested in link_bound_test.py.
"""
import os
import subprocess
import sys

import pytest

from tests import testing
from tfhp.runner import benchmark
from tfhp import cli
from tfhp import diagnose
from tfhp.launcher import cpu_load
from tfhp.launcher import links
from tfhp.models import registry

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


def test_repeats_are_refused_outside_cluster_mode_and_below_one(capsys, monkeypatch):
    assert _refusal(capsys, '--repeats=2') == (
        2, 'tfhp.diagnose: error: --repeats repeats a cluster diagnosis: it applies with '
        '--num_worker_tasks')
    monkeypatch.setattr(links, 'check_available', lambda: None)
    assert _refusal(capsys, '--num_worker_tasks=1', '--link_bandwidth=200mbit',
                    '--repeats=0') == (2, 'tfhp.diagnose: error: --repeats=0: must be at least 1')


def _parsed(*args):
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp.diagnose'] + list(args))
    return cli.FLAGS


def test_any_model_of_the_zoo_makes_a_worker_and_its_one_process_configuration():
    try:
        for data_name in (None, 'cifar10'):
            for model in registry.names(data_name):
                values = _parsed('--model=%s' % model, *(
                    ['--data_name=%s' % data_name] if data_name else []))
                cfg = diagnose.worker_config(values, 1, 2)
                assert cfg.model.name == model and cfg.cluster.job_name == 'worker'
                assert diagnose.one_process_config(cfg).cluster.job_name == ''
    finally:
        cli.FLAGS.unparse_flags()


MB = 1e6
# Per seed: the chief's median step on shaped links and on loopback, one process's, the ps
# NIC's bytes out per timed step, the cores' busy share in the shaped job's timed steps.
FAKE = {1234: (900.0, 300.0, 100.0, 32 * MB, 0.95),
        1235: (700.0, 320.0, 100.0, 30 * MB, 0.93),
        1236: (1300.0, 300.0, 100.0, 34 * MB, 0.97)}


def _fake_jobs(monkeypatch, calls):
    """diagnose's jobs and one-process runs answer FAKE; each call's seed goes to `calls`."""
    def run_job(num_ps, num_workers, args, timeout_s, link_bandwidth=None,
                ps_link_bandwidth=None):
        del timeout_s, ps_link_bandwidth
        seed = int(args[-1].split('=')[1])
        calls.append(('shaped' if link_bandwidth else 'loopback', seed, args))
        shaped_ms, loopback_ms, _, ps_bytes, busy = FAKE[seed]
        tasks = {'ps 0': {'link_bps': 100e6}, 'worker 0': {'link_bps': 100e6},
                 'worker 1': {'link_bps': 100e6}}
        summary = {'status': 0, 'links': {'tasks': tasks},
                   'cpu': {'cores': 2, 'tasks': num_ps + num_workers, 'busy_timed': busy}}
        chief = {'num_steps': 4, 'num_params': 4 * 10 ** 6,
                 'step_time_ms': {'p50': shaped_ms if link_bandwidth else loopback_ms},
                 'variable_bytes_by_device': {'/job:ps/task:0/device:CPU:0': 16 * 10 ** 6}}
        timed = {'tasks': {'ps 0': {'bytes_sent_per_step': ps_bytes,
                                    'bytes_received_per_step': ps_bytes - MB},
                           'worker 0': {'bytes_sent_per_step': ps_bytes / 2,
                                        'bytes_received_per_step': ps_bytes / 2}}}
        return summary, chief, timed if link_bandwidth else None

    def run_one_process(cfg, log):
        del log
        calls.append(('one process', cfg.run.tf_random_seed, cfg))
        return {'step_time_ms': {'p50': FAKE[cfg.run.tf_random_seed][2]}}

    monkeypatch.setattr(links, 'check_available', lambda: None)
    monkeypatch.setattr(diagnose, '_run_job', run_job)
    monkeypatch.setattr(benchmark, 'run', run_one_process)
    monkeypatch.setattr(cpu_load, 'cores', lambda: 2)   # never the machine's


def test_repeats_run_in_rounds_with_their_seeds_and_report_median_and_range(monkeypatch,
                                                                             capsys):
    calls = []
    _fake_jobs(monkeypatch, calls)
    _parsed('--num_worker_tasks=2', '--num_ps_tasks=1', '--link_bandwidth=100mbit',
            '--repeats=3', '--model=resnet20', '--data_name=cifar10', '--batch_size=8',
            '--tf_random_seed=1234', '--num_batches=4')
    try:
        status = diagnose.main(['tfhp.diagnose'])
    finally:
        cli.FLAGS.unparse_flags()
    out, err = capsys.readouterr()
    assert status == 0, err
    assert [(kind, seed) for kind, seed, _ in calls] == [
        (kind, seed) for seed in (1234, 1235, 1236)
        for kind in ('shaped', 'loopback', 'one process')]
    args = calls[3][2]   # the second round's shaped job: its seed once, the model's flags
    assert [a for a in args if 'seed' in a] == ['--tf_random_seed=1235']
    assert '--model=resnet20' in args and '--batch_size=8' in args
    lines = out.splitlines()
    # 3 tasks on the 2 faked cores: warned before the runs, then in the report with the busy
    # share of the repeats, offering the exact commands.
    commands = ('Emulated compute measures the cluster: python -m tfhp.calibrate '
                '--model=resnet20 --batch_size=8 --data_name=cifar10 --output=resnet20.json, '
                'then the same job with --emulated_compute=resnet20.json')
    assert lines[0] == ('warning: 3 tasks (2 workers, 1 ps) share 2 cores: each worker computes '
                        'about 1.5x slower than alone, so this job measures the cores, not the '
                        'cluster. ' + commands)
    assert ('warning: 3 tasks (2 workers, 1 ps) share 2 cores, 95% [93%\u201397%] busy in the '
            'timed steps: each worker computes about 1.5x slower than alone, so this job '
            'measures the cores, not the cluster. ' + commands) == lines[-3]
    assert '  on 100mbit links             900.00 [700.00\u20131300.00] ms' in lines
    assert ('link exposure:           67% [54%\u201377%] (1 - loopback / shaped): '
            '600.0 [380.0\u20131000.0] ms of the step') in lines
    assert any(line.startswith('  ps 0         100 Mbit/s 32.00 [30.00\u201334.00] / '
                               '31.00 [29.00\u201333.00] MB') for line in lines)
    # 4 M float32 parameters on 1 ps to 2 workers at 100 Mbit: 32 MB, 2560 ms each way.
    assert 'expected (W x S / (K x B) at the ps NIC, per direction): >= 2560.0 ms' in out
    assert lines[-1].startswith('Bottleneck: the network links: they cost 67% of the step '
                                '(600 of 900 ms')
    assert lines[-1].endswith('Over 3 repeats the link exposure spans 54\u201377%, the '
                              'communication exposure 86\u201392% and the step on the links '
                              '700\u20131300 ms (67% of its median).')


def test_the_cores_line_and_when_it_becomes_a_warning(monkeypatch):
    monkeypatch.setattr(cpu_load, 'cores', lambda: 16)
    runs = [{'shaped': {'cpu': {'busy_timed': b}}} for b in (0.91, 0.95, 0.40)]
    values = _parsed('--num_worker_tasks=2', '--num_ps_tasks=1', '--model=lenet')
    try:
        assert diagnose.cpu_notes(values, runs) == [
            'the cores were 91% [40%\u201395%] busy during the shaped job\'s timed steps: the '
            'CPU, not the links, set them']
        assert diagnose.cpu_notes(values, runs[2:]) == [
            'the cores were 40% busy during the shaped job\'s timed steps']
        assert diagnose.cpu_notes(values, [{'shaped': {}}]) == []
        # 5 tasks on 2 cores: the warning, with the busy share, in place of the line; none
        # where the compute is emulated (the workers wait, leaving the cores to the ps).
        values = _parsed('--num_worker_tasks=4', '--num_ps_tasks=1', '--model=lenet')
        assert diagnose.cpu_notes(values, runs, num_cores=2)[0].startswith(
            'warning: 5 tasks (4 workers, 1 ps) share 2 cores, 91% [40%\u201395%] busy')
        values = _parsed('--num_worker_tasks=4', '--num_ps_tasks=1', '--model=lenet',
                         '--emulated_compute=lenet.json')
        assert diagnose.cpu_notes(values, runs, num_cores=2)[0].startswith('the cores were 91%')
    finally:
        cli.FLAGS.unparse_flags()


@pytest.mark.cluster
def test_a_job_on_shaped_links_is_diagnosed_against_loopback_and_one_process():
    try:
        links.check_available()
    except links.LinksUnavailable as e:
        pytest.skip('this machine cannot emulate links: %s' % e)
    proc = _diagnose('--num_ps_tasks=1', '--num_worker_tasks=2', '--link_bandwidth=100mbit',
                     '--num_batches=4', '--repeats=2', *SMALL, timeout=480)
    assert proc.returncode == 0, proc.stderr[-2000:]
    lines = proc.stdout.splitlines()
    assert 'runs (the chief\'s median step time; median [min\u2013max] of 2 repeats):' in lines
    runs = [line.split() for line in lines if line.startswith('  on ') or
            line.startswith('  one ')]
    assert [run[0] for run in runs] == ['on', 'on', 'one']
    for run in runs:   # median [min-max] ms, the median between the two
        low, high = (float(v) for v in run[-2].strip('[]').split('\u2013'))
        assert low <= float(run[-3]) <= high
    assert any(line.startswith('link exposure:') for line in lines)
    assert any(line.startswith('  ps 0 ') and '100 Mbit/s' in line for line in lines)
    # 49,355 float32 parameters (0.197 MB) to each of 2 workers from 1 ps at 100 Mbit: 31.6 ms
    # each way.
    assert 'per direction): >= 31.6 ms' in proc.stdout
    assert lines[-1].startswith('Bottleneck: ') and ' Over 2 repeats the link exposure ' in (
        lines[-1])
    assert 'latency' not in lines[-1]

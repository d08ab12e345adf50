"""--deterministic: two runs of the `tfhp` command with the same flags and seed print the same
losses, through RecordInput and tf.data, on one device and on 2 in-graph towers, real and
synthetic data. Each run is a process of its own (the flag sets the process's thread pools
before TensorFlow starts its runtime), forked from the suite's forkserver, which imported
TensorFlow but started no runtime (an exec'd run printed the same losses and took 3 times as
long); all are started at once (`testing.Started`)."""
import re
import sys

import pytest

from tests import testing
from tests.pipelines import shapes
from tfhp import cli
from tfhp import config as config_lib

# Enough steps for a race or a shuffle to show: the runs differed from the second step.
_STEPS = 8
_COMMON = ['--model=lenet', '--image_size=28', '--batch_size=4', '--num_warmup_batches=1',
           '--display_every=1', '--num_batches=%d' % _STEPS, '--tf_random_seed=7',
           '--deterministic', '--optimizer=momentum', '--learning_rate=0.01']
_CASES = {
    'records_1': ['--data_dir={data}'],
    'records_2': ['--data_dir={data}', '--num_devices=2'],
    'datasets_1': ['--data_dir={data}', '--use_datasets'],
    'datasets_2': ['--data_dir={data}', '--use_datasets', '--num_devices=2'],
    'synthetic_2': ['--num_devices=2'],
}


@pytest.fixture(scope='module', name='started')
def _started(tmp_path_factory):
    data = tmp_path_factory.mktemp('shapes')
    shapes.make_shapes(str(data))
    commands = {}
    for case, flags in _CASES.items():
        for run in (0, 1):
            commands['%s_%d' % (case, run)] = [sys.executable, '-m', 'tfhp'] + [
                flag.replace('{data}', str(data)) for flag in _COMMON + flags]
    # Under xdist each worker runs some of the cases: it starts a run when its test reads it.
    processes = testing.Started(commands, tmp_path_factory.mktemp('runs'), fork=True,
                                ahead=[] if testing.xdist_worker() else None)
    yield processes
    processes.end()


def _losses(started, name):
    status, out, err, _ = started.result(name, 300)
    assert status == 0, (out + err)[-2000:]
    return re.findall(r'loss: (\S+)', out)


@pytest.mark.parametrize('case', sorted(_CASES))
def test_two_runs_of_one_seed_print_the_same_losses(started, case):
    first, second = _losses(started, case + '_0'), _losses(started, case + '_1')
    assert len(first) == _STEPS and first == second
    # The losses move: a run that printed one value throughout would pass the check above.
    assert len(set(first)) > 1


def test_the_environment_pins_the_pools_outside_a_cluster():
    cfg = testing.small_config(run={'deterministic': True})
    assert cli.runtime_environment(cfg, {}) == {
        'TF_DETERMINISTIC_OPS': '1', 'TF_NUM_INTEROP_THREADS': '1', 'TF_NUM_INTRAOP_THREADS': '1'}
    assert cli.runtime_environment(testing.small_config(), {}) == {}


@pytest.mark.parametrize('cluster, caveat', [
    ({}, None),
    (dict(cross_replica_sync=False), 'asynchronous updates apply in the order the workers '
                                     'finish'),
    (dict(replicas_to_aggregate=1), 'with spare replicas a step holds the first 1 gradients in'),
    (dict(), 'the input repeats, but a cluster task runs its ops side by side'),
])
def test_a_job_that_cannot_repeat_says_why(cluster, caveat):
    fields = dict(job_name='worker', task_index=0, ps_hosts=('127.0.0.1:2000',),
                  worker_hosts=('127.0.0.1:2001', '127.0.0.1:2002'), **cluster) if caveat else {}
    cfg = testing.small_config(run={'deterministic': True}, cluster=fields)
    said = config_lib.determinism_caveat(cfg)
    if caveat is None:
        assert said is None
    else:
        assert said.startswith('--deterministic: this job does not repeat exactly: ' + caveat)

"""Emulated compute: profiles from op times, the emulated model's variables and gradients, the
config's checks, and the launcher's CPU sampler."""
import time

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp.runner import benchmark
from tfhp.runner import build
from tfhp.runner import resolve
from tfhp.runner import calibration
from tfhp import config as config_lib
from tfhp import timing
from tfhp.emulation import model as emulated_model
from tfhp.emulation import profile as profile_lib
from tfhp.launcher import cpu_load
from tfhp.launcher import faults
from tfhp.launcher import local_job
from tfhp.models import registry

V = profile_lib.Variable


def test_a_batch_norm_belongs_to_its_layer():
    assert profile_lib.layer_of('stage1/block0/conv1/batchnorm/beta') == 'stage1/block0/conv1'
    assert profile_lib.layer_of('conv0/weights') == 'conv0'
    assert [name for name, _ in profile_lib.group_layers(
        [V('conv0/weights', (3, 3, 3, 8)), V('conv0/batchnorm/beta', (8,)),
         V('dense0/weights', (8, 10)), V('dense0/biases', (10,))])] == ['conv0', 'dense0']


def test_op_times_go_to_their_layers_and_scale_to_the_step():
    variables = [V('conv0/weights', (3, 3, 3, 8)), V('conv0/batchnorm/beta', (8,)),
                 V('conv1/weights', (3, 3, 8, 8)), V('dense0/weights', (8, 10))]
    ops = {'tower_0/forward/conv0/Conv2D': 1.0,
           'tower_0/forward/conv0/batchnorm/FusedBatchNormV3': 1.0,
           'tower_0/forward/conv1/Conv2D': 4.0,
           'tower_0/forward/add': 1.0,  # no layer's: spread in proportion (2:4:0)
           'tower_0/backward/gradients/tower_0/forward/conv1/Conv2D_grad/X': 6.0,
           'tower_0/backward/gradients/tower_0/forward/dense0/MatMul_grad/Y': 2.0,
           'apply/GradientDescent/update_conv0/weights/Apply': 50.0}  # not compute
    profile = profile_lib.from_op_times('m', 8, variables, ops, compute_s=0.15, source='test',
                                        apply_s=0.02)
    assert [layer.name for layer in profile.layers] == ['conv0', 'conv1', 'dense0']
    forward = [layer.forward_s for layer in profile.layers]
    backward = [layer.backward_s for layer in profile.layers]
    # 15 units of compute (7 forward, 8 backward) scaled to 0.15 s: 0.01 s per unit.
    np.testing.assert_allclose(forward, [0.02 + 0.01 / 3, 0.04 + 0.02 / 3, 0.0], atol=1e-9)
    np.testing.assert_allclose(backward, [0.0, 0.06, 0.02], atol=1e-9)
    assert profile.compute_s == pytest.approx(0.15)
    assert profile.gradient_bytes == 4 * (3 * 3 * 3 * 8 + 8 + 3 * 3 * 8 * 8 + 8 * 10)
    half = profile.scaled(0.075, 'half')
    assert half.compute_s == pytest.approx(0.075) and half.layers[1].forward_s == pytest.approx(
        forward[1] / 2)
    assert profile.apply_s == 0.02 and half.apply_s == pytest.approx(0.01)


def test_a_profile_round_trips_and_a_bad_file_is_named(tmp_path):
    profile = profile_lib.ComputeProfile('m', 4, (profile_lib.Layer(
        'fc', (V('fc/weights', (3, 2)), V('fc/mean', (2,), 'float32', False)), 0.1, 0.2),),
        'here')
    path = str(tmp_path / 'p.json')
    profile.save(path)
    assert profile_lib.load(path) == profile
    (tmp_path / 'bad.json').write_text('{"model": 1}')
    with pytest.raises(ValueError, match='bad.json is not a compute profile'):
        profile_lib.load(str(tmp_path / 'bad.json'))


def _profile(model, data_name, seconds_per_layer):
    """A profile of `model`'s real variables with the same time for every layer's pass."""
    cfg = config_lib.BenchmarkConfig(model=config_lib.ModelConfig(name=model, num_classes=10),
                                     data=config_lib.DataConfig(data_name=data_name))
    spec = registry.get(model, data_name)
    variables = calibration.model_variables(spec, cfg, 2, spec.image_size, 10)
    layers = tuple(profile_lib.Layer(name, tuple(vs), seconds_per_layer, seconds_per_layer)
                   for name, vs in profile_lib.group_layers(variables))
    return profile_lib.ComputeProfile(model, 2, layers, 'test'), variables


@pytest.mark.parametrize('model, data_name', [('lenet', None), ('resnet20', 'cifar10')])
def test_the_emulated_model_has_the_real_variables_and_every_gradient(model, data_name):
    profile, variables = _profile(model, data_name, 0.0)
    with tf.Graph().as_default():
        loss, logits = emulated_model.make_model_fn(profile, 10)(
            tf.zeros([2, 8, 8, 3]), tf.zeros([2], tf.int32))
        built = [(v.op.name, tuple(v.shape.as_list())) for v in tf.global_variables()]
        trainable = tf.trainable_variables()
        grads = tf.gradients(loss, trainable)
        assert logits.shape.as_list() == [2, 10]
        assert built == [(v.name, v.shape) for v in variables]
        assert len(trainable) == sum(v.trainable for v in variables) and None not in grads
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            values, weights = sess.run([grads, trainable])
    # Each gradient is its variable's value: the real bytes, no arithmetic.
    for grad, weight in zip(values, weights):
        np.testing.assert_array_equal(grad, weight)


def test_a_sliced_profile_has_the_sliced_models_variables_and_the_same_times():
    profile, _ = _profile('lenet', None, 0.004)
    cfg = config_lib.BenchmarkConfig(model=config_lib.ModelConfig(
        name='lenet', num_classes=10, layer_slice_bytes=262144))
    spec = registry.get('lenet')
    sliced_model = calibration.model_variables(spec, cfg, 2, spec.image_size, 10)
    sliced = profile.sliced(262144)
    # dense0's 6.4 MB in 26 slices, each a layer; the others as they were.
    assert [v for layer in sliced.layers for v in layer.variables] == sliced_model
    assert [layer.name for layer in sliced.layers] == (
        ['conv0', 'conv1'] + ['dense0/slice%d' % k for k in range(26)] + ['dense1'])
    assert sliced.layers[3].forward_s == pytest.approx(0.004 * 20 / 512)
    assert sliced.compute_s == pytest.approx(profile.compute_s)
    assert sliced.gradient_bytes == profile.gradient_bytes
    assert profile.sliced(0) == profile


def _second_step_s(profile, monkeypatch):
    """Seconds of the second of two forward-and-backward passes of the emulated `profile`, and
    the tally of both (the process's, swapped for a fresh one)."""
    tally = timing.PassTally()
    monkeypatch.setattr(timing, 'EMULATED_COMPUTE', tally)
    with tf.Graph().as_default():
        loss, _ = emulated_model.make_model_fn(profile, 10)(tf.zeros([2, 8, 8, 3]),
                                                            tf.zeros([2], tf.int32))
        grads = tf.gradients(loss, tf.trainable_variables())
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(grads)
            start = time.perf_counter()
            sess.run(grads)
            return time.perf_counter() - start, tally


def test_an_emulated_step_waits_every_layer_forward_and_backward(monkeypatch):
    profile, _ = _profile('lenet', None, 0.01)  # 4 layers: at least 80 ms a step
    elapsed, tally = _second_step_s(profile, monkeypatch)
    assert len(profile.layers) == 4 and elapsed >= 0.08
    # Two passes, each the profile's eight waits as they happened: no less than the profile.
    assert tally.per_pass_s() == pytest.approx(profile.compute_s, rel=0.5)
    assert tally.per_pass_s() >= profile.compute_s


def test_late_wakes_do_not_add_up_over_a_pass(monkeypatch):
    # Every sleep wakes 10 ms late, as on two cores busy with 16-32 workers. The schedule goes
    # on from when each layer was due: the forward and the backward chain of 4 waits of 20 ms
    # each end one late wake after their 80 ms (180 ms in all), where restarting from every
    # late wake would take 8 x 30 ms.
    profile, _ = _profile('lenet', None, 0.02)
    real_sleep = time.sleep
    monkeypatch.setattr(emulated_model.time, 'sleep', lambda s: real_sleep(s + 0.01))
    elapsed, tally = _second_step_s(profile, monkeypatch)
    assert len(profile.layers) == 4
    assert 0.18 <= elapsed < 0.215
    # The tally counts each chain from its first start to its last return: 90 + 90 ms.
    assert tally.per_pass_s() == pytest.approx(0.18, abs=0.015)


def test_a_pass_tally_averages_over_passes_not_over_waits():
    tally = timing.PassTally()
    assert tally.per_pass_s() is None
    for seconds, new_pass in [(0.1, True), (0.2, False), (0.3, True), (0.4, False)]:
        tally.add(seconds, new_pass)
    assert tally.per_pass_s() == pytest.approx(0.5)
    # A pass of one stage alone (a forward pass with no backward) is meaned with its stage's.
    staged = timing.PassTally()
    for seconds, new_pass, stage in [(0.1, True, 'forward'), (0.2, True, 'backward'),
                                     (0.1, True, 'forward')]:
        staged.add(seconds, new_pass, stage)
    assert staged.per_pass_s() == pytest.approx(0.3)
    staged.reset()
    assert staged.per_pass_s() is None


def test_the_config_names_a_profile_of_another_model_or_batch(tmp_path):
    profile, _ = _profile('lenet', None, 0.001)
    path = str(tmp_path / 'lenet.json')
    profile.save(path)
    assert config_lib.ModelConfig(name='lenet', emulated_compute=path).compute_profile == profile
    with pytest.raises(config_lib.ConfigError, match='profiles --model=lenet, not --model=vgg11'):
        config_lib.ModelConfig(name='vgg11', emulated_compute=path)
    with pytest.raises(config_lib.ConfigError, match='batch 2 per tower; drop --batch_size=8'):
        config_lib.ModelConfig(name='lenet', batch_size=8, emulated_compute=path)
    with pytest.raises(config_lib.ConfigError, match='--emulated_compute: .*missing.json'):
        config_lib.ModelConfig(name='lenet', emulated_compute=str(tmp_path / 'missing.json'))


def test_an_emulated_run_counts_the_real_parameters(tmp_path):
    profile, variables = _profile('lenet', None, 0.001)
    path = str(tmp_path / 'lenet.json')
    profile.save(path)
    cfg = config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name='lenet', num_classes=10, emulated_compute=path),
        run=config_lib.RunConfig(num_batches=2, num_warmup_batches=1))
    built = build.build(cfg)
    assert built.num_params == profile.num_params == sum(
        int(np.prod(v.shape)) for v in variables if v.trainable)
    assert built.image_size == resolve.EMULATED_IMAGE_SIZE and built.batch_size == 2
    # The record sets the compute part as it happened beside the profile's.
    record = benchmark.run(cfg, log=lambda line: None)
    assert 1000 * profile.compute_s <= record['emulated_compute_ms'] < 1000 * (
        profile.compute_s + 0.05)


def test_the_cpu_sampler_reads_the_busy_share_of_a_window():
    assert cpu_load.read_stat('cpu  60 0 30 100 10 0 0 0 0 0\ncpu0 1 2 3 4\n') == (90, 200)
    sampler = cpu_load.CpuSampler()
    sampler.samples = [(10.0, 0, 0), (20.0, 900, 1000), (30.0, 1000, 2000)]
    assert sampler.busy_fraction(10.0, 20.0) == pytest.approx(0.9)
    assert sampler.busy_fraction(15.0, 25.0) == pytest.approx((950 - 450) / 1000)
    assert sampler.busy_fraction(20.0, 20.0) is None
    # Fully busy, at epoch-sized times: apart, the two interpolations gave 1.0000000054.
    busy = cpu_load.CpuSampler()
    busy.samples = [(1795800000.0701547, 1000000055, 2000000055),
                    (1795800000.2404945, 1000000060, 2000000060),
                    (1795800000.3287547, 1000000092, 2000000092),
                    (1795800000.4928992, 1000000123, 2000000123)]
    assert busy.busy_fraction(1795800000.345612, 1795800000.4617808) == 1.0
    chief = {'timed_start_time': 10.0, 'end_times': [15.0, 20.0], 'global_steps_per_sec': 2.0}
    report = cpu_load.report(sampler, chief, 5)
    assert report['busy_timed'] == pytest.approx(0.9) and report['cpu_bound']
    assert cpu_load.report(sampler, {}, 5)['busy_timed'] is None


def test_the_sampler_counts_the_jobs_own_processes_not_the_machines_load():
    # A command name with spaces and parentheses; ppid 1, utime 70, stime 5.
    assert cpu_load.read_process_stat(
        '42 (python (x) y) S 1 42 42 0 -1 4194560 10 0 0 0 70 5 0 0 20 0 9 0') == (1, 75)
    # Task 10 and its child 11 are the job; 20 (another user's) and 1 are not.
    ticks = {'now': 0}

    def processes():
        t = ticks['now']
        return {1: (0, 5 * t), 10: (1, 30 * t), 11: (10, 20 * t), 20: (1, 100 * t)}
    sampler = cpu_load.CpuSampler(processes=lambda: processes(), clock=lambda: ticks['now'],
                                  ticks_per_s=100, num_cores=2)
    sampler.sample()   # watching nothing yet: counts nothing
    sampler.watch([10])
    for t in (1.0, 2.0, 3.0):
        ticks['now'] = t
        sampler.sample()
    # 50 of the 200 ticks a second two cores have: a quarter, the other user's 100 left out.
    assert sampler.busy_fraction(1.0, 3.0) == pytest.approx(0.25)
    assert cpu_load.job_ticks({5: (1, 7), 6: (5, 3), 8: (6, 1), 9: (1, 50)}, [5]) == 11


def test_a_task_that_ends_keeps_its_ticks_in_the_jobs_count():
    # Task 11 used 60 ticks by t=1 and ended before t=2; task 10 used 50 a second throughout.
    # A window ending after 11's exit still reads 10's share, not 10's less 11's (0% busy).
    table = {1.0: {10: (1, 50), 11: (1, 60)}, 2.0: {10: (1, 100)}, 3.0: {10: (1, 150)}}
    now = {'t': 1.0}
    sampler = cpu_load.CpuSampler(processes=lambda: table[now['t']], clock=lambda: now['t'],
                                  ticks_per_s=100, num_cores=2)
    sampler.watch([10, 11])
    for t in (1.0, 2.0, 3.0):
        now['t'] = t
        sampler.sample()
    assert [busy for _, busy, _ in sampler.samples] == [110, 160, 210]
    assert sampler.busy_fraction(1.0, 3.0) == pytest.approx(0.25)


def test_a_straggler_not_the_cpu_sets_a_busy_jobs_steps():
    sampler = cpu_load.CpuSampler()
    sampler.samples = [(10.0, 0, 0), (20.0, 950, 1000)]
    chief = {'timed_start_time': 10.0, 'end_times': [15.0, 20.0], 'global_steps_per_sec': 2.0}
    busy = cpu_load.report(sampler, chief, 3)
    assert busy['cpu_bound'] and 'straggler' not in busy
    slowed = cpu_load.report(sampler, chief, 3, straggler='--straggler_delay_ms=200')
    assert not slowed['cpu_bound'] and slowed['straggler'] == '--straggler_delay_ms=200'
    args = ['--straggler_workers=1', '--straggler_delay_ms=200']
    assert local_job.injected_straggler(args) == '--straggler_delay_ms=200'
    assert local_job.injected_straggler(['--straggler_delay_ms=200']) is None
    injector = faults.Injector(say=lambda _: None)
    injector.records = [{'kind': 'kill', 'task': 'worker 2'},
                        {'kind': 'pause', 'task': 'worker 1'}]
    assert local_job.injected_straggler([], injector) == 'pause worker 1'


def test_oversubscription_is_named_with_its_counts_unless_compute_is_emulated():
    warning = cpu_load.oversubscription(4, 3, emulated=False, num_cores=2)
    assert warning.startswith('7 tasks (4 workers, 3 ps) share 2 cores: each worker computes '
                              'about 3.5x slower than alone')
    assert warning.endswith('python -m tfhp.calibrate --model=MODEL --output=MODEL.json, then '
                            'the same job with --emulated_compute=MODEL.json')
    # With the cores' busy share and the job's model flags: the exact commands.
    warning = cpu_load.oversubscription(
        2, 1, emulated=False, num_cores=2, busy=timing.Range.of([0.97, 0.93, 0.95]),
        model_flags=('--model=resnet20', '--data_name=cifar10'))
    assert warning == (
        '3 tasks (2 workers, 1 ps) share 2 cores, 95% [93%\u201397%] busy in the timed steps: '
        'each worker computes about 1.5x slower than alone, so this job measures the cores, '
        'not the cluster. Emulated compute measures the cluster: python -m tfhp.calibrate '
        '--model=resnet20 --data_name=cifar10 --output=resnet20.json, then the same job with '
        '--emulated_compute=resnet20.json')
    assert cpu_load.oversubscription(4, 3, emulated=True, num_cores=2) is None
    assert cpu_load.oversubscription(1, 1, emulated=False, num_cores=2) is None

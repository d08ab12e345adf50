"""Runner overhead, fused vs composite batch norm, NHWC vs NCHW, on synthetic data.

For each model the runner's timed loop (`tfhp.session.run_steps`, with the CLI's periodic loss
fetch) and a bare `for: sess.run(train_op)` loop run on the same graph in the same session,
alternating for --repeats rounds; the overhead of a round is 1 - runner/bare of its images/sec.
Then batch-norm models run fused and composite, and every model NHWC and NCHW where the device
runs NCHW, each --repeats times (seeds --seed + r). Figures are median [min-max] over
the repeats (experiments/stats.py), '*' marking composite against fused and NCHW against NHWC
where the ranges are apart. Prints a table and one JSON line per result (appended to
--result_file if given).

  python -m experiments.runner_overhead                       # CPU defaults, a few minutes
  python -m experiments.runner_overhead --device=gpu --models=resnet50 --batch_size=64
"""
import time

from absl import flags
import tensorflow.compat.v1 as tf

from experiments import frame
from experiments import stats
from tfhp.runner import benchmark
from tfhp.runner import build
from tfhp import compat
from tfhp import config as config_lib
from tfhp.runner import devices
from tfhp import session as session_lib

FLAGS = flags.FLAGS


def define_flags():
    """Defines the study's own flags, the common ones being the frame's (only when run as a
    script, so tests can import it beside tfhp's flags)."""
    flags.DEFINE_list('models', ['trivial', 'lenet', 'alexnet', 'resnet50'],
                      'Models to measure.')
    flags.DEFINE_list('bn_models', ['resnet50'], 'Models for the fused vs composite comparison.')
    flags.DEFINE_integer('batch_size', 8, 'Per-device batch size for every model.')
    flags.DEFINE_enum('device', 'cpu', config_lib.DEVICES, 'Device kind.')


def _config(model, data_format='NHWC', fuse_batchnorm=True, seed=1234):
    return config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name=model, batch_size=FLAGS.batch_size,
                                     data_format=data_format, fuse_batchnorm=fuse_batchnorm),
        device=config_lib.DeviceConfig(device=FLAGS.device),
        run=config_lib.RunConfig(num_batches=FLAGS.steps, num_warmup_batches=5,
                                 tf_random_seed=seed))


def _bare_loop(sess, train_op, num_steps, images_per_step):
    start = time.perf_counter()
    for _ in range(num_steps):
        sess.run(train_op)
    return num_steps * images_per_step / (time.perf_counter() - start)


def measure_overhead(model):
    """images/sec of the runner's loop and of a bare loop on one graph, and the overhead."""
    built = build.build(_config(model, seed=FLAGS.seed))
    ops, n = built.ops, FLAGS.steps
    runner, bare = [], []
    with tf.Session(graph=built.graph, config=built.session_config) as sess:
        sess.run(built.init)
        sess.run([ops.train_op, ops.loss])  # builds the executor of the runner's fetches
        for _ in range(5):
            sess.run(ops.train_op)
        for _ in range(FLAGS.repeats):
            times = session_lib.run_steps(
                sess, ops.train_op, n, built.images_per_step,
                [session_lib.Observer(10, {'loss': ops.loss}, lambda *_: None)])
            runner.append(times.images_per_sec)
            bare.append(_bare_loop(sess, ops.train_op, n, built.images_per_step))
    return {'study': 'runner_overhead', 'model': model, 'batch_size': built.batch_size,
            'seed': FLAGS.seed, 'repeats': FLAGS.repeats,
            'runner_images_per_sec': stats.summarise(runner),
            'bare_images_per_sec': stats.summarise(bare),
            'overhead_pct': stats.summarise([100.0 * (1.0 - r / b)
                                             for r, b in zip(runner, bare)])}


def measure_variant(model, study, **model_fields):
    """images/sec of benchmark.run with ModelConfig fields changed, once per repeat."""
    runs = []
    for seed in range(FLAGS.seed, FLAGS.seed + FLAGS.repeats):
        result = benchmark.run(_config(model, seed=seed, **model_fields), log=lambda _: None)
        runs.append(dict({'study': study, 'model': model, 'batch_size': result['batch_size'],
                          'images_per_sec': result['images_per_sec'],
                          'step_time_ms_p50': result['step_time_ms']['p50']}, **model_fields))
    return stats.combine(runs, ('images_per_sec', 'step_time_ms_p50'),
                         [FLAGS.seed + r for r in range(FLAGS.repeats)])


TABLE = [('model', 'model', None), ('study', 'label', None),
         ('runner images/s', 'runner_images_per_sec', '%.1f'),
         ('bare loop images/s', 'bare_images_per_sec', '%.1f'),
         ('overhead %', 'overhead_pct', '%.2f'), ('images/s', 'images_per_sec', '%.1f')]


def study():
    """The runner against a bare loop per model, then the batch-norm and data-format variants."""
    compat.enable_graph_mode()
    results = [measure_overhead(m) for m in FLAGS.models]
    for model in FLAGS.bn_models:
        for fused in (True, False):
            results.append(measure_variant(model, 'batchnorm', fuse_batchnorm=fused))
    nchw = devices.supports_nchw(FLAGS.device)
    for model in FLAGS.models:
        for data_format in ('NHWC', 'NCHW') if nchw else ('NHWC',):
            results.append(measure_variant(model, 'data_format', data_format=data_format))
    for r in results:
        r['label'] = 'runner vs bare' if r['study'] == 'runner_overhead' else '%s %s' % (
            r['study'], ('fused' if r.get('fuse_batchnorm') else 'composite')
            if r['study'] == 'batchnorm' else r['data_format'])
    for study in ('batchnorm', 'data_format'):
        for model in set(FLAGS.models) | set(FLAGS.bn_models):
            rows = [r for r in results if (r['study'], r['model']) == (study, model)]
            if len(rows) > 1:
                stats.mark(rows, rows[0], ('images_per_sec',))
    if not nchw:
        print('NCHW: not measured, this TensorFlow build\'s %s kernels reject it'
              % FLAGS.device.upper())
    frame.report([dict(r, device=FLAGS.device) for r in results], TABLE,
                 'fused (batchnorm), NHWC (data_format)')


if __name__ == '__main__':
    define_flags()
    frame.main(study, steps=20)

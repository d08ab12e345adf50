"""`python -m tfhp.diagnose <benchmark flags>`: where does this configuration lose its time?

Runs the configuration once with one traced (untimed) step, then its trace-free ablations:
synthetic instead of real data (when --data_dir is set), `independent` instead of the chosen
--variable_update, and one device instead of --num_devices. Prints input exposure,
communication exposure, scaling efficiency, the bytes moved between devices per step against
the measured memcpy bandwidth, and one sentence naming the bottleneck (see
tfhp.profiling.bottleneck for the definitions). An ablation that does not apply or cannot be
configured is skipped, and the report says why.

Every run is a measurement only: checkpoints, summaries and result files are off.
--plot=PATH.png also draws the traced step's time per stage on each device and each run's step
time (`tfhp.plots.stage_breakdown`; needs matplotlib, the extra `tfhp[plots]`).
"""
import dataclasses
import os
import sys
import tempfile

# Quiet TensorFlow's C++ start-up chatter unless the user asked for it.
os.environ.setdefault('TF_CPP_MIN_LOG_LEVEL', '2')

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from tfhp import benchmark
from tfhp import cli
from tfhp import compat
from tfhp import config as config_lib
from tfhp.config import paths
from tfhp import plots
from tfhp.data import info as data_info
from tfhp.profiling import analysis
from tfhp.profiling import bottleneck
from tfhp.profiling import capture

flags.DEFINE_string('plot', None, 'Also draw the report (stage breakdown, step times) as this '
                    'PNG; needs matplotlib: pip install -e \'.[plots]\'.')


def _replace(cfg, section, **fields):
    return dataclasses.replace(cfg, **{section: dataclasses.replace(getattr(cfg, section),
                                                                    **fields)})


def measurement(cfg):
    """cfg with everything that writes files or resumes from them turned off."""
    cfg = _replace(cfg, 'run', train_dir=None, save_model_steps=None, result_file=None)
    return dataclasses.replace(cfg, profile=config_lib.ProfileConfig())


def ablations(cfg):
    """[(name, config or the reason it is skipped)] of the trace-free ablations of cfg."""
    variants = []

    def add(name, reason, make):
        if reason:
            variants.append((name, reason))
            return
        try:
            variants.append((name, make()))
        except config_lib.ConfigError as e:
            variants.append((name, 'cannot be configured: %s' % e))

    def synthetic():
        # Synthetic data stands in for CIFAR-10 when that is the data, so that the same
        # (32x32) model variant runs; for ImageNet and anything else, ImageNet-like data.
        name = benchmark.data_set(cfg).name
        return _replace(cfg, 'data', data_dir=None, use_datasets=False,
                        skip_corrupt_records=False,
                        data_name=name if name in data_info.STAND_INS else None)

    add('synthetic data', None if cfg.data.data_dir else 'no real data configured (--data_dir)',
        synthetic)
    add('independent', ('the configuration is already independent'
                        if cfg.replication.variable_update == 'independent' else None),
        lambda: _replace(cfg, 'replication', variable_update='independent'))
    add('one device', None if cfg.device.num_devices > 1 else 'the configuration has one device',
        lambda: _replace(cfg, 'device', num_devices=1))
    return variants


def diagnose(cfg, log=print):
    """Runs cfg and its ablations and computes the bottleneck report.

    Args:
      cfg: a training `tfhp.config.BenchmarkConfig` of one process.
      log: called with a line as each run starts.
    Returns:
      A `tfhp.profiling.bottleneck.Diagnosis`.
    Raises:
      tfhp.config.ConfigError: cfg evaluates or belongs to a cluster job.
    """
    if cfg.run.eval or cfg.cluster.job_name:
        raise config_lib.ConfigError('python -m tfhp.diagnose measures training in one process; '
                                     'it does not apply with --eval or --job_name')
    cfg = measurement(cfg)
    with tempfile.TemporaryDirectory() as directory:
        trace = os.path.join(directory, 'step.json')
        log('running the configuration (one traced step, untimed) ...')
        traced = _replace(cfg, 'profile', trace_file=trace,
                          trace_step=(cfg.run.num_batches + 1) // 2)
        runs = {'configured': benchmark.run(traced, log=lambda _: None)}
        step = analysis.analyze(capture.load_run_metadata(trace))
    skipped = {}
    for name, variant in ablations(cfg):
        if isinstance(variant, str):
            skipped[name] = variant
        else:
            log('running the ablation: %s ...' % name)
            runs[name] = benchmark.run(variant, log=lambda _: None)
    cores = os.cpu_count() if cfg.device.device == 'cpu' and cfg.device.num_devices > 1 else None
    return bottleneck.diagnose(runs, skipped, step, bottleneck.memcpy_bandwidth(),
                               cfg.device.num_devices, shared_cores=cores)


def main(argv):
    """Prints the bottleneck report of the configuration the flags describe."""
    if len(argv) > 1:
        print('tfhp.diagnose: error: unexpected arguments: %s' % ' '.join(argv[1:]),
              file=sys.stderr)
        return 2
    try:
        cfg = cli.config_from_flags(cli.FLAGS)
        if cli.FLAGS.plot:
            plots.check_available()
            paths.check_output_file('plot', cli.FLAGS.plot)
        compat.enable_graph_mode()
        diagnosis = diagnose(cfg)
        print(bottleneck.format_diagnosis(diagnosis))
    except (config_lib.ConfigError, plots.PlotsUnavailable) as e:
        print('tfhp.diagnose: error: %s' % e, file=sys.stderr)
        return 2
    if cli.FLAGS.plot:
        plots.stage_breakdown(cli.FLAGS.plot, diagnosis)
        print('plot: %s' % cli.FLAGS.plot)
    return 0


if __name__ == '__main__':
    app.run(lambda argv: sys.exit(main(argv)))

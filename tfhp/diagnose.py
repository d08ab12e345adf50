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
time (`tfhp.profiling.stage_figure`; needs matplotlib, the extra `tfhp[plots]`); --figure_data=PATH.jsonl
keeps the figure's numbers, with the machine, date, commit and command, as docs/results/data
keeps them (`python -m experiments.figures` draws them again).

Cluster mode, `python -m tfhp.diagnose --num_worker_tasks=2 --num_ps_tasks=1
--link_bandwidth=200mbit <benchmark flags>`: runs the job with every task on an emulated link
of that rate (`tfhp.launch`, `tfhp.launcher.links`; needs root), the same job on loopback, and
one worker's configuration in one process (its compute alone), then prints each one's step
time, the link exposure, the communication exposure, the bytes each NIC moved per timed step
with the least time they take at its rate, the ps NIC's W x S / (K x B), how busy the cores
were, and a verdict (`tfhp.profiling.link_bound`). Any model of the zoo, real or emulated
(--emulated_compute). --repeats=R runs the three R times in rounds (seeds --tf_random_seed + r)
and prints each figure as median [min-max]; the verdict is drawn from the medians and says how
wide the repeats spread. When the workers and ps tasks outnumber the cores and the compute is
real, the report warns with the counts and the commands of emulated compute
(`tfhp.launcher.cpu_load.oversubscription`).
"""
import contextlib
import dataclasses
import io
import os
import sys
import tempfile

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from tfhp.runner import benchmark
from tfhp.runner import resolve
from tfhp import cli
from tfhp import cli_flags
from tfhp import compat
from tfhp import compression
from tfhp import config as config_lib
from tfhp.config import paths
from tfhp.data import info as data_info
from tfhp.launcher import cpu_load
from tfhp.launcher import link_traffic
from tfhp.launcher import link_config
from tfhp.launcher import links as links_lib
from tfhp.launcher import local_job
from tfhp.launcher import plan
from tfhp import modes
from tfhp import plots
from tfhp import provenance
from tfhp import timing
from tfhp.profiling import analysis
from tfhp.profiling import bottleneck
from tfhp.profiling import capture
from tfhp.profiling import link_bound
from tfhp.profiling import stage_figure

flags.DEFINE_string('plot', None, 'Also draw the report (stage breakdown, step times) as this '
                    'PNG; needs matplotlib: pip install -e \'.[plots]\'.')
flags.DEFINE_string('figure_data', None, 'Also write the figure\'s numbers (self time per '
                    'stage and device, step time per run) here as JSON lines under a header '
                    'naming this run\'s machine, date, commit and command (docs/results/data\'s '
                    'format).')
flags.DEFINE_integer('num_worker_tasks', 0, 'Cluster mode: diagnose a job of this many worker '
                     'tasks on this machine (0: one process).')
flags.DEFINE_integer('num_ps_tasks', 1, 'Cluster mode: ps tasks of the job.')
# The rates, as the launcher's options are (`link_config.OPTIONS`).
flags.DEFINE_string('link_bandwidth', None,
                    'Cluster mode: %s.' % link_config.OPTIONS['link_bandwidth'])
flags.DEFINE_string('ps_link_bandwidth', None,
                    'Cluster mode: %s.' % link_config.OPTIONS['ps_link_bandwidth'])
flags.DEFINE_float('job_timeout_s', 900.0, 'Cluster mode: bound on each job.')
flags.DEFINE_integer('repeats', 1, 'Cluster mode: run the jobs this many times (seeds '
                     '--tf_random_seed + r) and report each figure as median [min-max].')

# The what-if without aggregation: each tower trains alone (no communication at all).
_INDEPENDENT = modes.names(lambda s: not s.aggregates)[0]


def _replace(cfg, section, **fields):
    return dataclasses.replace(cfg, **{section: dataclasses.replace(getattr(cfg, section),
                                                                    **fields)})


def measurement(cfg):
    """cfg with everything that writes files or resumes from them turned off."""
    cfg = _replace(cfg, 'run', train_dir=None, save_model_steps=None, result_file=None)
    return dataclasses.replace(cfg, profile=config_lib.ProfileConfig())


def _no_communication(cfg):
    """Why cfg has no communication to ablate (the 'independent' run), or None."""
    if not cfg.replication.strategy.aggregates:
        return 'the configuration is already independent'
    if cfg.device.num_devices == 1:
        return 'one device: no gradients to aggregate, nothing communicated'
    return None


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
        name = resolve.data_set(cfg).name
        return _replace(cfg, 'data', data_dir=None, use_datasets=False,
                        skip_corrupt_records=False,
                        data_name=name if name in data_info.STAND_INS else None)

    add('synthetic data', None if cfg.data.data_dir else 'no real data configured (--data_dir)',
        synthetic)
    add('independent', _no_communication(cfg),
        lambda: _replace(cfg, 'replication', variable_update=_INDEPENDENT))
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


# Flags the diagnosed job's tasks do not get: the launcher sets the first, diagnose runs
# measure only (no checkpoints, summaries, traces or result files), and each repeat sets its
# own seed.
_NOT_FOR_TASKS = set(plan.OWN_FLAGS) | {
    'train_dir', 'save_model_steps', 'save_model_secs', 'save_summaries_steps', 'trace_file',
    'trace_step', 'trace_memory', 'tf_random_seed'}
# The benchmark flags besides --model that shape a model's compute (python -m tfhp.calibrate
# takes each, so that its profile is the job's model).
_MODEL_FLAGS = ('batch_size', 'image_size', 'data_name', 'num_classes', 'data_format')


def task_args(values, seed):
    """The benchmark flags given on the command line, as every task of the job gets them, and
    --tf_random_seed=seed."""
    return [f.serialize() for f in values.get_flags_for_module(cli_flags)
            if f.present and f.name not in _NOT_FOR_TASKS] + ['--tf_random_seed=%d' % seed]


def model_flags(values):
    """--model=M and the given flags that shape its compute: the calibrate command's flags."""
    return ['--model=%s' % values.model] + [values[name].serialize() for name in _MODEL_FLAGS
                                            if values[name].present]


def worker_config(values, num_ps, num_workers):
    """Worker 0's configuration, as its task builds it (ConfigError where it would refuse)."""
    names = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts')
    saved = {name: values[name].value for name in names}
    try:
        values.job_name, values.task_index = 'worker', 0
        values.ps_hosts = ['127.0.0.1:%d' % (2000 + k) for k in range(num_ps)]
        values.worker_hosts = ['127.0.0.1:%d' % (3000 + w) for w in range(num_workers)]
        return cli.config_from_flags(values)
    finally:
        for name, value in saved.items():
            values[name].value = value


def one_process_config(cfg):
    """One worker's configuration in one process: its towers and batch, no cluster.

    Between-graph-only updates become `parameter_server` (on one device every manager computes
    the same), gradients stay float32 (their narrowing is part of what a cluster sends).
    """
    replication = cfg.replication
    if not replication.strategy.one_graph:
        replication = dataclasses.replace(replication, variable_update=modes.DEFAULT_STRATEGY)
    replication = dataclasses.replace(replication, gradient_transfer_dtype='float32',
                                      gradient_compression=compression.NONE)
    return dataclasses.replace(measurement(cfg), replication=replication,
                               cluster=config_lib.ClusterConfig())


def _run_job(num_ps, num_workers, args, timeout_s, link_bandwidth=None, ps_link_bandwidth=None):
    """(summary, chief result, timed link report or None); ConfigError if the job failed."""
    output = io.StringIO()
    sampler = link_traffic.NicSampler() if link_bandwidth else contextlib.nullcontext()
    with sampler:
        summary, results = local_job.launch_job(num_ps, num_workers, args, timeout_s=timeout_s,
                                                link_bandwidth=link_bandwidth,
                                                ps_link_bandwidth=ps_link_bandwidth, out=output)
    chief = results.get(('worker', 0))
    if summary['status'] or not chief or not chief.get('num_steps'):
        tail = ' | '.join(output.getvalue().splitlines()[-4:])
        raise config_lib.ConfigError('the job %s failed (status %d): %s' % (
            'on %s links' % link_bandwidth if link_bandwidth else 'on loopback',
            summary['status'], tail))
    timed = None
    if link_bandwidth:
        timed = link_traffic.timed_report(sampler.samples, summary['links']['tasks'], chief)
    return summary, chief, timed


def _expected_traffic(cfg, chief, num_ps, num_workers):
    """`link_bound.expected_traffic` of the job, from its chief's result (None: no model)."""
    update = cfg.replication.variable_update
    if not link_bound.has_traffic_model(update):
        return None
    model_bytes = 4 * chief['num_params']
    ps_bytes = link_bound.ps_task_bytes(chief.get('variable_bytes_by_device', {}), num_ps)
    if not cfg.replication.strategy.worker_all_reduce and not sum(ps_bytes):
        ps_bytes = [model_bytes / num_ps] * num_ps  # masters not among the placement
    compressor = cfg.replication.compressor()
    scale = compressor.wire_ratio if compressor else 1.0
    return link_bound.expected_traffic(update, num_workers, model_bytes,
                                       ps_bytes if num_ps else None, scale)


def diagnose_cluster(values, num_ps, num_workers, link_bandwidth, ps_link_bandwidth=None,
                     timeout_s=900.0, repeats=1, log=print):
    """Runs the job on shaped links, on loopback and one worker in one process, `repeats` times
    in rounds (round r with --tf_random_seed + r, as the studies do); diagnoses it.

    Args:
      values: the parsed flags (the benchmark's configuration).
      num_ps, num_workers: the job's tasks.
      link_bandwidth, ps_link_bandwidth: the NICs' rates (tc units).
      timeout_s: bound on each job.
      repeats: rounds of the three runs.
      log: called with a line as each run starts.
    Returns:
      (`tfhp.profiling.link_bound.RepeatedDiagnosis`, [{'shaped', 'loopback', 'one process',
      'timed_links': each run's summary, result or timed link report}] per repeat).
    Raises:
      tfhp.config.ConfigError: a flag the job refuses, a bad rate, links this machine cannot
        make (one line naming what is missing), repeats < 1, or a job failed.
    """
    if repeats < 1:
        raise config_lib.ConfigError('--repeats=%d: must be at least 1' % repeats)
    try:  # before any work: a bad rate, or a machine that cannot make links
        for rate in filter(None, (link_bandwidth, ps_link_bandwidth)):
            link_config.parse_rate(rate)
        links_lib.check_available()
    except ValueError as e:
        raise config_lib.ConfigError(str(e)) from None
    cfg = worker_config(values, num_ps, num_workers)
    single = one_process_config(cfg)  # refused before any job runs, if it is
    step_ms, measured, runs, expected = [], [], [], None
    for r in range(repeats):
        seed = cfg.run.tf_random_seed + r
        args = task_args(values, seed)
        log('%srunning the job on %s links (%d ps, %d workers) ...' % (
            'repeat %d of %d (seed %d): ' % (r + 1, repeats, seed) if repeats > 1 else '',
            link_bandwidth, num_ps, num_workers))
        shaped, shaped_chief, timed = _run_job(num_ps, num_workers, args, timeout_s,
                                               link_bandwidth, ps_link_bandwidth)
        log('running the job on loopback ...')
        loopback, loopback_chief, _ = _run_job(num_ps, num_workers, args, timeout_s)
        log('running one worker\'s configuration in one process ...')
        one = benchmark.run(_replace(single, 'run', tf_random_seed=seed), log=lambda _: None)
        links = shaped['links']
        per_step = timed['tasks'] if timed else {
            name: t for name, t in links['tasks'].items() if 'bytes_sent_per_step' in t}
        measured.append({name: (t['bytes_sent_per_step'], t['bytes_received_per_step'])
                         for name, t in per_step.items()})
        step_ms.append((shaped_chief['step_time_ms']['p50'],
                        loopback_chief['step_time_ms']['p50'], one['step_time_ms']['p50']))
        expected = _expected_traffic(cfg, shaped_chief, num_ps, num_workers)
        runs.append({'shaped': shaped, 'loopback': loopback, 'one process': one,
                     'timed_links': timed})
    rates = {name: t['link_bps'] for name, t in runs[0]['shaped']['links']['tasks'].items()}
    diagnosis = link_bound.diagnose_repeats(step_ms, measured, rates, expected,
                                            synchronous=cfg.cluster.cross_replica_sync)
    return diagnosis, runs


def cpu_notes(values, runs, num_cores=None):
    """The report's lines on the cores: how busy they were in the shaped jobs' timed steps
    (median [min-max] over the repeats) and, when the tasks oversubscribe them, the warning
    with its counts and the emulated-compute commands (`cpu_load.oversubscription`).

    Args:
      values: the parsed flags.
      runs: `diagnose_cluster`'s runs.
      num_cores: the cores (default: this process's).
    """
    busy = [run['shaped'].get('cpu', {}).get('busy_timed') for run in runs]
    busy = timing.Range.of(b for b in busy if b is not None) if any(
        b is not None for b in busy) else None
    warning = cpu_load.oversubscription(values.num_worker_tasks, values.num_ps_tasks,
                                        bool(values.emulated_compute), num_cores, busy,
                                        model_flags(values))
    if warning:
        return ['warning: ' + warning]
    if busy is None:
        return []
    return ['the cores were %s busy during the shaped job\'s timed steps%s' % (
        busy.text('%.0f%%', 100.0),
        ': the CPU, not the links, set them' if busy.median >= cpu_load.CPU_BOUND and not any(
            run['shaped'].get('cpu', {}).get('straggler') for run in runs) else '')]


def _main_cluster(values):
    if not values.link_bandwidth:
        raise config_lib.ConfigError('--num_worker_tasks diagnoses a job on emulated links: '
                                     'give --link_bandwidth (e.g. 200mbit)')
    if values.plot or values.figure_data:
        raise config_lib.ConfigError('--plot and --figure_data draw the one-process report; '
                                     'they do not apply with --num_worker_tasks')
    # Said before the runs too, so that a long diagnosis of the cores can be stopped early.
    warning = cpu_load.oversubscription(values.num_worker_tasks, values.num_ps_tasks,
                                        bool(values.emulated_compute),
                                        model_flags=model_flags(values))
    if warning:
        print('warning: ' + warning)
    compat.enable_graph_mode()  # for the one-process runs
    diagnosis, runs = diagnose_cluster(values, values.num_ps_tasks, values.num_worker_tasks,
                                       values.link_bandwidth, values.ps_link_bandwidth,
                                       values.job_timeout_s, values.repeats)
    notes = cpu_notes(values, runs)
    if not all(run['timed_links'] for run in runs):
        notes.insert(0, '(a repeat sampled no timed window: its bytes per step include '
                        'start-up)')
    print(link_bound.format_cluster_diagnosis(diagnosis, labels=(
        'on %s links' % values.link_bandwidth, 'on loopback', 'one process (compute)'),
        notes=notes))
    return 0


def main(argv):
    """Prints the bottleneck report of the configuration the flags describe."""
    if len(argv) > 1:
        print('tfhp.diagnose: error: unexpected arguments: %s' % ' '.join(argv[1:]),
              file=sys.stderr)
        return 2
    try:
        if cli.FLAGS.num_worker_tasks:
            return _main_cluster(cli.FLAGS)
        if cli.FLAGS.repeats != 1:
            raise config_lib.ConfigError('--repeats repeats a cluster diagnosis: it applies '
                                         'with --num_worker_tasks')
        cfg = cli.config_from_flags(cli.FLAGS)
        if cli.FLAGS.plot:
            plots.check_available()
            paths.check_output_file('plot', cli.FLAGS.plot)
        if cli.FLAGS.figure_data:
            paths.check_output_file('figure_data', cli.FLAGS.figure_data)
        compat.enable_graph_mode()
        stamp = provenance.stamp()  # the commit that ran, not the one at the end
        diagnosis = diagnose(cfg)
        print(bottleneck.format_diagnosis(diagnosis))
    except (config_lib.ConfigError, plots.PlotsUnavailable) as e:
        print('tfhp.diagnose: error: %s' % e, file=sys.stderr)
        return 2
    header = dict(kind='stages', title=diagnosis.verdict, **stamp)
    data = stage_figure.points(diagnosis)
    if cli.FLAGS.figure_data:
        provenance.write_figure_data(cli.FLAGS.figure_data, header, data)
        print('figure data: %s' % cli.FLAGS.figure_data)
    if cli.FLAGS.plot:
        caption = provenance.caption(stamp['date'], stamp['machine'], stamp['commit'])
        for path in plots.draw_with_svg(
                lambda out: stage_figure.draw_data(out, header, data, caption),
                cli.FLAGS.plot):
            print('plot: %s' % path)
    return 0


if __name__ == '__main__':
    app.run(lambda argv: sys.exit(main(argv)))

"""The `tfhp` command: absl flags -> BenchmarkConfig -> tfhp.runner.benchmark.run.

The flags are defined in `tfhp.cli_flags`, read here and nowhere else. Where tf_cnn_benchmarks has a flag for the same thing,
the name and meaning are the same, so its command lines re-run here. A configuration that cannot
work exits with status 2 and one line naming the flag, before any graph is built.
"""
import dataclasses
import os
import sys

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import app  # pylint: disable=g-import-not-at-top

from tfhp import cli_flags
from tfhp import config as config_lib
from tfhp import flag_help
from tfhp import modes
from tfhp.cluster import errors as cluster_errors
from tfhp.config import slurm
from tfhp.config import tf_config

FLAGS = cli_flags.FLAGS

# The flags that say where this task is; a resolver that reads the environment refuses them.
_TASK_FLAGS = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts', 'controller_host')


def _transfer_fields(values):
    """ClusterConfig's ps_transfer, ps_chunk_bytes, ps_window_bytes and ps_group_bytes, from
    the flags or from their old spellings (`tfhp.modes.old_transfer_spelling`), not both."""
    new = ('ps_transfer', 'ps_chunk_bytes', 'ps_window_bytes', 'ps_group_bytes')
    old = [name for name in cli_flags.OLD_TRANSFER_FLAGS if values[name].present]
    if not old:
        return dict(zip(new, [values.ps_transfer or ''] + [values[n].value for n in new[1:]]))
    given = [name for name in new if values[name].present]
    if given:
        raise config_lib.ConfigError('--%s is an old spelling of --ps_transfer and its sizes, '
                                     'given with --%s: use one' % (old[0], given[0]))
    try:
        return dict(zip(new, modes.old_transfer_spelling(
            *[values[name].value for name in cli_flags.OLD_TRANSFER_FLAGS])))
    except ValueError as e:
        raise config_lib.ConfigError(str(e)) from None


def _section(cls, values, **overrides):
    """cls built from the flags named like its fields (every config field is a flag name)."""
    fields = {f.name: getattr(values, f.name) for f in dataclasses.fields(cls)
              if f.name not in overrides}
    return cls(**fields, **overrides)


def _resolver(values, environ):
    """The cluster resolver this task uses: --cluster_resolver, or what 'auto' picks."""
    resolver = values.cluster_resolver
    given = [name for name in _TASK_FLAGS if values[name].present]
    if resolver in ('tf_config', 'slurm') and given:
        raise config_lib.ConfigError('--cluster_resolver=%s reads this task from the '
                                     'environment; drop --%s' % (resolver, given[0]))
    slurm_flags = [name for name in ('slurm_num_ps', 'slurm_port_base') if values[name].present]
    if resolver != 'slurm' and slurm_flags:
        raise config_lib.ConfigError('--%s applies to --cluster_resolver=slurm only'
                                     % slurm_flags[0])
    if resolver == 'tf_config' and not environ.get('TF_CONFIG'):
        raise config_lib.ConfigError('--cluster_resolver=tf_config needs the TF_CONFIG '
                                     'environment variable')
    if resolver != 'auto':
        return resolver
    if values.job_name:
        return 'flags'
    if environ.get('TF_CONFIG'):
        return 'tf_config'
    # Slurm is never picked by itself: SLURM_PROCID is set in every step of an allocation,
    # a batch script's one process included. But a step of several tasks each running the
    # same one-process benchmark is a job left unsaid.
    tasks = slurm.num_tasks(environ)
    if tasks > 1:
        raise config_lib.ConfigError('srun started %d tasks of this command: '
                                     '--cluster_resolver=slurm makes them one job, '
                                     '--cluster_resolver=flags runs each alone' % tasks)
    return 'flags'


# tf_cnn_benchmarks evaluates a distributed run in one local process with the run's training
# flags (benchmark_cnn_distributed_test). So does --eval here: a flag that shapes only the
# training step or a cluster job is taken as tf_cnn_benchmarks takes it, in a line that says so.
# Rows: (whether the flags set it, the flag values --eval runs with instead, the line).
_ONE_PROCESS_EVAL = (
    (lambda v: v.staged_vars, lambda v: {'staged_vars': False},
     lambda v: '--staged_vars stages the training step\'s reads of the variables; --eval '
               'takes no training step: no effect'),
    (lambda v: not v.cross_replica_sync, lambda v: {'cross_replica_sync': True},
     lambda v: '--cross_replica_sync=false makes training steps asynchronous; --eval takes no '
               'training step: no effect'),
    (lambda v: modes.strategy(v.variable_update).evaluated_as,
     lambda v: {'variable_update': modes.strategy(v.variable_update).evaluated_as},
     lambda v: '--variable_update=%s needs a cluster; in one process its checkpoint is '
               'evaluated as --variable_update=%s' % (
                   v.variable_update, modes.strategy(v.variable_update).evaluated_as)),
)


def one_process_eval(values, environ):
    """What --eval in one process takes differently (`_ONE_PROCESS_EVAL`): (the flag values to
    use instead, {name: value}; the lines saying why, to print). Nothing for other runs."""
    if not values.eval or values.job_name or _resolver(values, environ) != 'flags':
        return {}, []
    rows = [row for row in _ONE_PROCESS_EVAL if row[0](values)]
    instead = {name: value for _, given, _ in rows for name, value in given(values).items()}
    return instead, ['tfhp: %s' % line(values) for _, _, line in rows]


def _fields(cls, values):
    """The entries of `values` that name fields of dataclass `cls`."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {name: value for name, value in values.items() if name in names}


def _cluster_config(values, environ, instead):
    """The ClusterConfig of the cluster flags, TF_CONFIG or Slurm's environment (_resolver);
    `instead`: flag values that replace the flags' (`one_process_eval`)."""
    resolver = _resolver(values, environ)
    if resolver == 'flags':
        hosts = dict(job_name=values.job_name, task_index=values.task_index,
                     ps_hosts=tuple(values.ps_hosts), worker_hosts=tuple(values.worker_hosts),
                     controller_host=values.controller_host)
    elif resolver == 'tf_config':
        hosts = tf_config.cluster_fields(environ['TF_CONFIG'])
    else:
        hosts = slurm.cluster_fields(environ, values.slurm_num_ps, values.slurm_port_base)
    try:
        stragglers = tuple(int(w) for w in values.straggler_workers)
    except ValueError:
        raise config_lib.ConfigError('--straggler_workers must list worker indices, got %r'
                                     % ','.join(values.straggler_workers)) from None
    # A strategy that names its graph mode (tf_cnn_benchmarks' distributed_all_reduce) sets it
    # unless --graph_mode says otherwise.
    implied = modes.strategy(instead.get('variable_update', values.variable_update)).graph_mode
    graph_mode = (implied if implied and not values['graph_mode'].present else
                  values.graph_mode)
    return _section(config_lib.ClusterConfig, values, straggler_workers=stragglers,
                    graph_mode=graph_mode, **hosts, **_transfer_fields(values),
                    **_fields(config_lib.ClusterConfig, instead))


def config_from_flags(values, environ=None):
    """Builds the BenchmarkConfig from parsed flag values (raises ConfigError if invalid).

    Args:
      values: parsed flags.
      environ: the process environment, where TF_CONFIG and Slurm's variables are read
        (--cluster_resolver); None: an empty one.
    """
    if values.num_epochs is not None and values['num_batches'].present:
        raise config_lib.ConfigError('--num_epochs and --num_batches both set the length of '
                                     'the run; use one')
    environ = environ or {}
    instead, _ = one_process_eval(values, environ)
    return config_lib.BenchmarkConfig(
        model=_section(config_lib.ModelConfig, values, name=values.model),
        optimizer=_section(config_lib.OptimizerConfig, values),
        device=_section(config_lib.DeviceConfig, values),
        replication=_section(config_lib.ReplicationConfig, values,
                             **_fields(config_lib.ReplicationConfig, instead)),
        run=_section(config_lib.RunConfig, values),
        profile=_section(config_lib.ProfileConfig, values),
        cluster=_cluster_config(values, environ, instead),
        data=_section(config_lib.DataConfig, values),
        staleness=_section(config_lib.StalenessConfig, values),
        precision=_section(config_lib.PrecisionConfig, values),
        xla=_section(config_lib.XlaConfig, values),
        evaluation=_section(config_lib.EvalConfig, values))


def runtime_environment(cfg, environ):
    """The environment variables TensorFlow reads once, when it starts, for `cfg`.

    --mkl exports the Intel OpenMP settings (tf_cnn_benchmarks' meaning). --xla makes every
    session of this process auto-cluster (TF_XLA_FLAGS --tf_xla_auto_jit=1, which reaches the
    sessions a cluster task makes too) and lets the CPU do so (--tf_xla_cpu_global_jit; without
    it TensorFlow auto-clusters on GPUs only).
    --deterministic sets TF_DETERMINISTIC_OPS=1 (TensorFlow's op determinism: kernels that
    cannot repeat refuse to run; on a GPU, deterministic ones are chosen) and, outside a
    cluster, thread pools of one thread (TF_NUM_INTEROP_THREADS, TF_NUM_INTRAOP_THREADS) for
    every session of the process, probes included (`tfhp.runner.build._session_config` says why).

    Args:
      cfg: the BenchmarkConfig.
      environ: the current environment (read only).
    Returns:
      {variable: value} to set before TensorFlow is imported.
    """
    variables = cfg.device.openmp_environment()
    if cfg.xla.xla:
        wanted = ['--tf_xla_auto_jit=1'] + (['--tf_xla_cpu_global_jit'] if
                                            cfg.device.device == 'cpu' else [])
        present = environ.get('TF_XLA_FLAGS', '').split()
        missing = [flag for flag in wanted if flag not in present]
        if missing:
            variables['TF_XLA_FLAGS'] = ' '.join(present + missing)
    if cfg.run.deterministic:
        variables['TF_DETERMINISTIC_OPS'] = '1'
        if not cfg.cluster.enabled:
            variables.update(TF_NUM_INTEROP_THREADS='1', TF_NUM_INTRAOP_THREADS='1')
    return variables


def _is_cluster_task():
    return bool(FLAGS.job_name or os.environ.get('TF_CONFIG') or
                FLAGS.cluster_resolver == 'slurm')


def main(argv):
    """Runs the benchmark the flags describe; returns the exit status.

    0 done; 1 a cluster task lost a peer (its line names it); 2 a setting is at fault (one line
    naming the flag); 128 + N a cluster job stopped by signal N (SIGTERM, SIGINT).
    """
    if len(argv) > 1:
        print('tfhp: error: unexpected arguments: %s' % ' '.join(argv[1:]), file=sys.stderr)
        return 2
    try:
        cfg = config_from_flags(FLAGS, os.environ)
        config_lib.check_output_paths(cfg, config_lib.writes_train_dir(cfg.cluster))
    except config_lib.ConfigError as e:
        print('tfhp: error: %s' % e, file=sys.stderr)
        return 2
    for line in one_process_eval(FLAGS, os.environ)[1]:
        print(line)
    os.environ.update(runtime_environment(cfg, os.environ))
    caveat = config_lib.determinism_caveat(cfg)
    if caveat:
        print(caveat)
    stop = None
    if cfg.cluster.enabled:
        # Before TensorFlow starts any thread: they must inherit the blocked stop signals.
        from tfhp.cluster import signals  # pylint: disable=g-import-not-at-top
        stop = signals.StopSignals().install()
    # TensorFlow is imported only once the flags and output paths are known to be valid.
    from tfhp import compat  # pylint: disable=g-import-not-at-top
    compat.enable_graph_mode()
    from tfhp.runner import benchmark  # pylint: disable=g-import-not-at-top
    from tfhp.runner import resolve  # pylint: disable=g-import-not-at-top
    startup.mark('imported')
    try:
        # Cluster tasks read --num_batches too: --num_epochs is resolved for every task here.
        cfg = resolve.resolve_classes(resolve.resolve_epochs(cfg))
        if cfg.cluster.enabled:
            from tfhp.cluster import roles  # pylint: disable=g-import-not-at-top
            result = roles.run(cfg, stop=stop)
        else:
            result = benchmark.run(cfg)
    except config_lib.ConfigError as e:
        print('tfhp: error: %s' % e, file=sys.stderr)
        return 2
    except cluster_errors.PeerLost as e:
        print('tfhp: error: %s' % e, file=sys.stderr)
        return 1
    if result.get('stopped_by'):
        return 128 + result['stopped_by']
    return 0


def _exit(status):
    """Exits with `status`; a cluster task skips the interpreter's teardown.

    Tearing down an interpreter that loaded TensorFlow takes ~2 s (measured on the 2-core dev
    machine, `os._exit` 0.15 s) and a job waits for its slowest task; a cluster task has written
    its results by now, and its threads blocked in the runtime (the sync chief's update loop, the
    peer watch) die with it, as do sessions whose closing could wait on a lost peer.
    """
    if _is_cluster_task():
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)  # pylint: disable=protected-access
    sys.exit(status)


USAGE = """usage: tfhp [flags]     (python -m tfhp [flags]: the same command)

Builds the training step the flags describe, warms it up, times --num_batches steps and prints
total images/sec. Each flag in full: docs/flags.md; --helpfull adds absl's and the libraries'
flags to these."""


def _parse_flags(argv):
    """absl's parsing, except that --help (-h, -?, --helpshort) prints this command's flags in
    their groups and exits 0 (`flag_help.parse`)."""
    return flag_help.parse(argv, USAGE, flag_help.grouped(
        FLAGS.get_flags_for_module(cli_flags.__name__), cli_flags.HELP_GROUPS,
        hidden=cli_flags.HIDDEN_FLAGS))


def run_main():
    """Console-script entry point."""
    app.run(lambda argv: _exit(main(argv)), flags_parser=_parse_flags)

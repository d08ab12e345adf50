"""BenchmarkConfig: every section of one run, and the checks that span sections."""
import dataclasses

from tfhp import compression
from tfhp import modes
from tfhp import topology as topology_lib
from tfhp.config import cluster as cluster_lib
from tfhp.config import data as data_lib
from tfhp.config import device as device_lib
from tfhp.config import errors
from tfhp.config import evaluation as evaluation_lib
from tfhp.config import model as model_lib
from tfhp.config import optimizer as optimizer_lib
from tfhp.config import precision as precision_lib
from tfhp.config import profile as profile_lib
from tfhp.config import replication as replication_lib
from tfhp.config import run as run_lib
from tfhp.config import staleness as staleness_lib
from tfhp.config import xla as xla_lib
from tfhp.ops import allreduce_spec


def _in_graph_async(cfg):
    return topology_lib.is_in_graph_async(cfg.cluster.mode, cfg.cluster.cross_replica_sync)


def _update_flag(predicate):
    """'--variable_update=x', or '--variable_update in x, y': the strategies predicate admits."""
    names = modes.names(predicate)
    return ('--variable_update=' if len(names) == 1 else '--variable_update in ') + ', '.join(names)


def _check_in_graph_replication(cfg):
    """Replication settings that depend on other sections (devices, run, cluster)."""
    replication = cfg.replication
    strategy = replication.strategy
    spec = replication.all_reduce_spec
    gpu_only = allreduce_spec.gpu_only(spec) if spec else ()
    errors.require(not gpu_only or cfg.device.device == 'gpu',
                   '--all_reduce_spec=%s uses %s, which runs on GPUs only; with --device=cpu '
                   'use one of %s', spec, ', '.join(gpu_only),
                   ', '.join(allreduce_spec.cpu_algorithms()))
    errors.require(not (replication.staged_reads and not cfg.trains),
                   '%s stages training reads; it does not apply with --eval or --forward_only',
                   replication.staged_reads_flag)
    errors.require(replication.compression == compression.NONE or
                   cfg.cluster.mode.graph_per_worker or strategy.tower_all_reduce or
                   strategy.uses_ps,
                   '%s applies to the all-reduce of %s, to what towers send to the parameter '
                   'devices, or to what between-graph workers send; got %r in one graph',
                   replication.compression_flag,
                   _update_flag(lambda s: s.tower_all_reduce), replication.variable_update)
    errors.require(not replication.momentum_correction or cfg.optimizer.optimizer == 'sgd',
                   '--momentum_correction applies the momentum on the senders; the update '
                   'must be plain SGD (--optimizer=sgd), got --optimizer=%s',
                   cfg.optimizer.optimizer)
    in_graph_async = _in_graph_async(cfg)
    errors.require(not in_graph_async or (strategy.asynchronous and strategy.one_graph and
                                          not replication.staged_reads),
                   'in-graph asynchronous training (--cross_replica_sync=false in one process or '
                   'with --graph_mode=in_graph) needs %s without %s',
                   _update_flag(lambda s: s.asynchronous and s.one_graph),
                   replication.staged_reads_flag)
    errors.require(not in_graph_async or not (cfg.profile.trace_file or
                                              cfg.profile.save_summaries_steps),
                   'in-graph asynchronous training runs one step per thread: --trace_file and '
                   '--save_summaries_steps do not apply')


def _check_transfer(cfg):
    """--ps_transfer and its sizes: where a transfer applies, then its row's own rules
    (`tfhp.modes.check_transfer`)."""
    cluster, strategy = cfg.cluster, cfg.replication.strategy
    sizes = [(flag, getattr(cluster, flag)) for flag in ('ps_chunk_bytes', 'ps_window_bytes',
                                                          'ps_group_bytes')]
    given = ['--ps_transfer'] * bool(cluster.ps_transfer) + ['--' + f for f, v in sizes if v]
    takes = (cluster.enabled and cluster.mode.graph_per_worker and cluster.cross_replica_sync
             and strategy.ps_transfer)
    if not takes:
        errors.require(not given, '%s sets how the synchronous between-graph workers of %s '
                       'reach the ps tasks; got %s%s', ', '.join(given),
                       _update_flag(lambda s: s.ps_transfer), cfg.replication.variable_update,
                       ' in one process' if not cluster.enabled else ' in one graph' if
                       cluster.mode.one_graph else '' if cluster.cross_replica_sync else
                       ' asynchronous')
        return
    try:
        row = modes.transfer_of(strategy, cluster.ps_transfer)
    except ValueError as e:
        raise errors.ConfigError('--ps_transfer=%s: %s' % (cluster.ps_transfer, e)) from None
    problem = modes.check_transfer(
        row, strategy, *[v for _, v in sizes],
        spares=cluster.replicas_to_aggregate not in (None, cluster.num_workers),
        downlink=cfg.replication.downlink_compression != compression.NONE)
    errors.require(problem is None, '%s', problem)


def _check_cluster(cfg):
    """Cluster settings that depend on other sections (replication, run)."""
    cluster, update = cfg.cluster, cfg.replication.variable_update
    strategy, mode = cfg.replication.strategy, cluster.mode
    errors.require(strategy.runs_in(mode) or mode.cluster,
                   '--variable_update=%s needs a cluster (--job_name, --worker_hosts, ... or '
                   'TF_CONFIG)', update)
    errors.require(cluster.save_model_secs is None or cfg.run.train_dir,
                   '--save_model_secs needs --train_dir')
    errors.require(not cluster.partition_min_bytes or strategy.partitions,
                   '--partition_min_bytes splits parameter-server variables; it needs '
                   '%s, got %r', _update_flag(lambda s: s.partitions), update)
    _check_transfer(cfg)
    if cfg.replication.downlink_compression != compression.NONE:
        errors.require(mode.graph_per_worker and cluster.cross_replica_sync and
                       cluster.replicas_to_aggregate in (None, cluster.num_workers),
                       '--downlink_compression sends each step\'s delta once, so every worker '
                       'must take every step: it needs synchronous between-graph workers '
                       'without spares (drop %s)',
                       '--cross_replica_sync=false' if not cluster.cross_replica_sync else
                       '--replicas_to_aggregate' if cluster.replicas_to_aggregate else
                       '--graph_mode=in_graph')
    if cfg.run.target_global_step:
        reason = ('a run without a cluster' if not cluster.enabled else 'an in-graph job' if
                  mode.one_graph else 'asynchronous workers' if not cluster.cross_replica_sync
                  else None)
        errors.require(reason is None, '--target_global_step ends synchronous between-graph '
                       'workers at one global step, not %s: drop it', reason)
    if not cluster.enabled:
        return
    # A client in a container runs the one-process runner, and the ps tasks serving such
    # clients (which get the same flags from tfhp.search) build nothing.
    for flag, used in (('--eval', cfg.run.eval),
                       ('--eval_during_training_*', cfg.evaluation.during_training)):
        errors.require(not used or cluster.container or cluster.serve_clients,
                       '%s runs in one process; drop --job_name', flag)
    # Inference across a cluster: the in-graph client's one-process runner, or each
    # between-graph worker reading the ps tasks' variables (tfhp.cluster.inference).
    errors.require(not cfg.run.forward_only or mode.one_graph or strategy.uses_ps or
                   cluster.container or cluster.serve_clients,
                   '--forward_only between graphs reads the variables on the ps tasks: it needs '
                   '%s, got %r (or --graph_mode=in_graph)',
                   _update_flag(lambda s: s.uses_ps and s.graph_per_worker), update)
    staged = cfg.replication.staged_reads_flag if cfg.replication.staged_reads else None
    errors.require(not staged or (mode.graph_per_worker and not cluster.container),
                   '%s across a cluster stages each between-graph worker\'s reads of the ps '
                   'variables: drop %s', staged,
                   '--container' if cluster.container else '--graph_mode=in_graph')
    errors.require(not (staged and cluster.partition_min_bytes),
                   '%s stages whole variables: drop --partition_min_bytes', staged)
    if mode.one_graph:
        errors.require(strategy.runs_in(mode),
                       '--variable_update=%s builds a graph per worker; use '
                       '--graph_mode=between_graph', update)
        errors.require(cluster.replicas_to_aggregate is None,
                       '--replicas_to_aggregate (spare replicas) needs --graph_mode=between_graph')
        errors.require(cluster.cross_replica_sync or strategy.asynchronous,
                       'in-graph asynchronous training (--cross_replica_sync=false) needs '
                       '%s', _update_flag(lambda s: s.asynchronous and s.one_graph))
        return
    errors.require(strategy.runs_in(mode),
                   '--variable_update=%s is in-graph; between-graph jobs take %s', update,
                   ', '.join(modes.names(lambda s: s.graph_per_worker)))
    errors.require(cluster.job_name != 'ps' or cluster.ps_hosts, '--job_name=ps needs --ps_hosts')
    # Its extra steps would be one worker's alone: a synchronous job's steps go in pairs.
    errors.require(not cfg.profile.tfprof_file,
                   '--tfprof_file profiles extra steps of one process; between graphs trace a '
                   'step of every worker instead (--trace_file, with {task} in the path)')
    errors.require(cluster.cross_replica_sync or strategy.asynchronous,
                   '--variable_update=%s is synchronous; drop --cross_replica_sync=false', update)
    errors.require(cluster.replicas_to_aggregate in (None, cluster.num_workers) or strategy.spares,
                   '--variable_update=%s has no spare replicas; drop --replicas_to_aggregate',
                   update)
    errors.require(not strategy.uses_ps or cluster.ps_hosts,
                   '--variable_update=%s between workers needs --ps_hosts', update)


def _check_staleness(cfg):
    """Staleness settings that depend on the cluster and replication sections."""
    remedies = cfg.staleness.remedies
    between_graph = cfg.cluster.mode.graph_per_worker
    errors.require(not remedies or not cfg.cluster.cross_replica_sync,
                   '%s apply to asynchronous training: add --cross_replica_sync=false',
                   ', '.join(remedies))
    errors.require(not remedies or cfg.replication.strategy.staleness,
                   '%s need %s, got %r', ', '.join(remedies),
                   _update_flag(lambda s: s.staleness), cfg.replication.variable_update)
    # tfhp.replication.async_replicas: staged weights are older than the measure says.
    errors.require(not remedies or not cfg.replication.staged_reads,
                   '%s act on measured staleness, which leaves out the lag of %s\'s staged '
                   'reads: drop one', ', '.join(remedies), cfg.replication.staged_reads_flag)
    chief_steps = cfg.run.num_warmup_batches + cfg.run.num_batches
    errors.require(not (between_graph and cfg.staleness.async_warmup_steps > chief_steps),
                   '--async_warmup_steps=%d: the chief takes only %d steps '
                   '(--num_warmup_batches + --num_batches), so the other workers would never join',
                   cfg.staleness.async_warmup_steps, chief_steps)
    errors.require(not (cfg.staleness.measure_staleness and between_graph),
                   '--measure_staleness applies in-graph: between-graph synchronous steps drop '
                   'late gradients (counted in dropped_gradients), and asynchronous jobs always '
                   'measure it')


def _check_modes(cfg):
    """Settings of training, evaluation and inference that depend on the mode."""
    run, evaluation = cfg.run, cfg.evaluation
    mode = '--eval' if run.eval else '--forward_only' if run.forward_only else None
    errors.require(not (mode and run.num_epochs),
                   '--num_epochs counts training epochs; with %s use --num_batches', mode)
    errors.require(not (mode and evaluation.during_training),
                   '--eval_during_training_* evaluates while training; it does not apply with '
                   '%s', mode)
    evaluates = run.eval or evaluation.during_training
    for flag in ('num_eval_batches', 'eval_batch_size'):
        errors.require(evaluates or getattr(evaluation, flag) is None,
                       '--%s applies to --eval and --eval_during_training_*', flag)
    errors.require(not (evaluation.during_training and _in_graph_async(cfg)),
                   '--eval_during_training_* needs synchronous training; drop '
                   '--cross_replica_sync=false')
    errors.require(not (cfg.data.input_only and (mode or evaluation.during_training)),
                   '--input_only times the input pipeline alone; it does not apply with %s',
                   mode or '--eval_during_training_*')
    profile = cfg.profile
    for flag, used in (('--trace_file', profile.trace_file),
                       ('--tfprof_file', profile.tfprof_file),
                       ('--partitioned_graph_file_prefix', profile.partitioned_graph_file_prefix)):
        errors.require(not (used and mode), '%s profiles training steps; it does not apply '
                       'with %s', flag, mode)


@dataclasses.dataclass(frozen=True)
class BenchmarkConfig:
    """Everything one benchmark run needs; built once from flags."""
    model: model_lib.ModelConfig = dataclasses.field(default_factory=model_lib.ModelConfig)
    optimizer: optimizer_lib.OptimizerConfig = dataclasses.field(
        default_factory=optimizer_lib.OptimizerConfig)
    device: device_lib.DeviceConfig = dataclasses.field(default_factory=device_lib.DeviceConfig)
    replication: replication_lib.ReplicationConfig = dataclasses.field(
        default_factory=replication_lib.ReplicationConfig)
    run: run_lib.RunConfig = dataclasses.field(default_factory=run_lib.RunConfig)
    cluster: cluster_lib.ClusterConfig = dataclasses.field(
        default_factory=cluster_lib.ClusterConfig)
    profile: profile_lib.ProfileConfig = dataclasses.field(
        default_factory=profile_lib.ProfileConfig)
    data: data_lib.DataConfig = dataclasses.field(default_factory=data_lib.DataConfig)
    staleness: staleness_lib.StalenessConfig = dataclasses.field(
        default_factory=staleness_lib.StalenessConfig)
    precision: precision_lib.PrecisionConfig = dataclasses.field(
        default_factory=precision_lib.PrecisionConfig)
    xla: xla_lib.XlaConfig = dataclasses.field(default_factory=xla_lib.XlaConfig)
    evaluation: evaluation_lib.EvalConfig = dataclasses.field(
        default_factory=evaluation_lib.EvalConfig)

    def __post_init__(self):
        # Profiling settings that depend on other sections.
        profile, run = self.profile, self.run
        errors.require(not profile.trace_file or profile.trace_step <= run.num_batches or
                       run.num_epochs, '--trace_step=%d is after the last step '
                       '(--num_batches=%d)', profile.trace_step, run.num_batches)
        writes_summaries = profile.save_summaries_steps and profile.summary_verbosity
        errors.require(not writes_summaries or (run.train_dir and self.trains),
                       '--save_summaries_steps writes training summaries to --train_dir: it needs '
                       '--train_dir and does not apply with --eval or --forward_only')
        _check_modes(self)
        _check_in_graph_replication(self)
        _check_cluster(self)
        _check_staleness(self)
        errors.require(not (self.data.input_only and (run.eval or run.train_dir or
                                                      self.cluster.job_name)),
                       '--input_only times this process\'s input pipeline alone; it does not '
                       'apply with --eval, --train_dir or a cluster job')

    @property
    def trains(self):
        """Whether this run trains (not --eval, --forward_only or --input_only)."""
        return not (self.run.eval or self.run.forward_only or self.data.input_only)

    def to_dict(self):
        """A JSON-serialisable dict of every setting (for result files)."""
        return dataclasses.asdict(self)


def determinism_caveat(cfg):
    """Why a --deterministic run of cfg does not repeat exactly, in one line; None when it does.

    In one process (one device or in-graph towers) a seed fixes every loss. A cluster task
    keeps its inter-op threads (its blocking queues need them), so the order of its ops, and
    the rounding of updates that race with reads, may differ; and where a protocol lets the
    workers' timing decide what a step holds it differs more: asynchronous updates apply in the
    order workers finish, and spare replicas make a step of the first gradients in.
    """
    if not cfg.run.deterministic or not cfg.cluster.enabled:
        return None
    cluster = cfg.cluster
    workers = cluster.num_workers
    if not cluster.cross_replica_sync:
        why = 'asynchronous updates apply in the order the workers finish'
    elif (cluster.replicas_to_aggregate or workers) < workers:
        why = 'with spare replicas a step holds the first %d gradients in' % (
            cluster.replicas_to_aggregate)
    else:
        why = ('the input repeats, but a cluster task runs its ops side by side, so losses may '
               'differ in the last digits')
    return '--deterministic: this job does not repeat exactly: %s.' % why


def all_reduce_replication(cfg):
    """cfg.replication with --compact_gradient_transfer applied: float16 compute all-reduces
    its gradients in float16 (tf_cnn_benchmarks' meaning) through the one cast of
    --gradient_transfer_dtype, unless that flag chose another transfer dtype.

    Args:
      cfg: a BenchmarkConfig.
    Returns:
      The ReplicationConfig to build the variable manager from.
    """
    replication = cfg.replication
    if (cfg.precision.compact_transfer and replication.strategy.tower_all_reduce and
            replication.compression == compression.NONE):
        return dataclasses.replace(replication, gradient_transfer_dtype='float16')
    return replication

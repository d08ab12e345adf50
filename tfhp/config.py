"""Plain, frozen configuration objects, one per concern, validated on construction.

Flags are parsed once at the edge (`tfhp.cli`, experiment scripts) and turned into a
`BenchmarkConfig`; library code takes explicit arguments unpacked from these objects and never
reads flags. Every check that needs no TensorFlow lives here, so that a flag that cannot work is
refused before any graph is built; checks that need to ask the runtime (is there a GPU, does
this build run NCHW) live in `tfhp.devices`.
"""
import dataclasses
import re
from typing import Optional, Tuple

from tfhp.ops import allreduce_spec

OPTIMIZERS = ('sgd', 'momentum', 'rmsprop', 'adam')
DATA_FORMATS = ('NHWC', 'NCHW')
DEVICES = ('cpu', 'gpu')


class ConfigError(ValueError):
    """A setting that cannot work; the message names the flag at fault."""


def _require(condition, message, *args):
    if not condition:
        raise ConfigError(message % args)


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Which network, at which size and layout.

    Attributes:
      name: registry name (`tfhp.models.registry.names()`).
      batch_size: per-tower batch size; None takes the model's default.
      image_size: square input size; None takes the model's default.
      num_classes: output classes (1000 for ImageNet-like synthetic data).
      data_format: 'NHWC' or 'NCHW'.
      fuse_batchnorm: fused batch-norm kernel (True) or composite ops (False).
    """
    name: str = 'trivial'
    batch_size: Optional[int] = None
    image_size: Optional[int] = None
    num_classes: int = 1000
    data_format: str = 'NHWC'
    fuse_batchnorm: bool = True

    def __post_init__(self):
        _require(self.batch_size is None or self.batch_size > 0,
                 '--batch_size must be positive, got %s', self.batch_size)
        _require(self.image_size is None or self.image_size > 0,
                 '--image_size must be positive, got %s', self.image_size)
        _require(self.num_classes > 1, '--num_classes must be at least 2, got %s',
                 self.num_classes)
        _require(self.data_format in DATA_FORMATS, '--data_format must be one of %s, got %r',
                 DATA_FORMATS, self.data_format)


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """Optimizer, learning-rate schedule, regularisation and clipping.

    Attributes:
      optimizer: one of OPTIMIZERS.
      learning_rate: base rate; None takes the model's default.
      momentum: for 'momentum' and 'rmsprop'.
      rmsprop_decay, rmsprop_epsilon: RMSProp settings (reference-benchmark defaults).
      adam_beta1, adam_beta2, adam_epsilon: Adam settings.
      weight_decay: L2 coefficient on weights (not biases or batch-norm parameters).
      gradient_clip: clip each tower's gradients to [-clip, clip]; None disables.
      piecewise_learning_rate_schedule: 'r0;e1;r1;e2;r2...': rate r0 until epoch e1, then r1...
        (overrides learning_rate).
      num_learning_rate_warmup_epochs: linear warm-up from 0 over this many epochs.
      learning_rate_base_batch_size: when > 0, the linear scaling rule: the rate is multiplied by
        global_batch / this (Goyal et al. 2017 use 256).
    """
    optimizer: str = 'sgd'
    learning_rate: Optional[float] = None
    momentum: float = 0.9
    rmsprop_decay: float = 0.9
    rmsprop_epsilon: float = 1.0
    adam_beta1: float = 0.9
    adam_beta2: float = 0.999
    adam_epsilon: float = 1e-8
    weight_decay: float = 4e-5
    gradient_clip: Optional[float] = None
    piecewise_learning_rate_schedule: str = ''
    num_learning_rate_warmup_epochs: float = 0.0
    learning_rate_base_batch_size: int = 0

    def __post_init__(self):
        _require(self.optimizer in OPTIMIZERS, '--optimizer must be one of %s, got %r',
                 OPTIMIZERS, self.optimizer)
        _require(self.learning_rate is None or self.learning_rate > 0,
                 '--learning_rate must be positive, got %s', self.learning_rate)
        _require(self.weight_decay >= 0, '--weight_decay must be >= 0, got %s',
                 self.weight_decay)
        _require(self.gradient_clip is None or self.gradient_clip > 0,
                 '--gradient_clip must be positive, got %s', self.gradient_clip)
        _require(self.num_learning_rate_warmup_epochs >= 0,
                 '--num_learning_rate_warmup_epochs must be >= 0, got %s',
                 self.num_learning_rate_warmup_epochs)
        _require(self.learning_rate_base_batch_size >= 0,
                 '--learning_rate_base_batch_size must be >= 0, got %s',
                 self.learning_rate_base_batch_size)
        if self.piecewise_learning_rate_schedule:
            parse_piecewise_schedule(self.piecewise_learning_rate_schedule)


def parse_piecewise_schedule(text):
    """Parses 'r0;e1;r1;...' into (boundaries_in_epochs, rates); ConfigError if malformed."""
    parts = text.split(';')
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ConfigError('--piecewise_learning_rate_schedule %r: every item must be a number'
                          % text) from None
    _require(len(values) % 2 == 1, '--piecewise_learning_rate_schedule %r must be '
             'rate;epoch;rate;...;rate (an odd number of items)', text)
    rates, boundaries = values[0::2], values[1::2]
    _require(all(b > a for a, b in zip(boundaries, boundaries[1:])),
             '--piecewise_learning_rate_schedule %r: epochs must increase', text)
    _require(all(r > 0 for r in rates), '--piecewise_learning_rate_schedule %r: rates must be '
             'positive', text)
    return boundaries, rates


@dataclasses.dataclass(frozen=True)
class DeviceConfig:
    """Where towers run.

    Attributes:
      device: 'cpu' or 'gpu'.
      num_devices: towers in this process (virtual CPU devices when device is 'cpu').
      local_parameter_device: 'cpu' or 'gpu': where parameter-server variables live locally.
      num_intra_threads, num_inter_threads: TensorFlow thread pools; 0 lets TF choose.
    """
    device: str = 'cpu'
    num_devices: int = 1
    local_parameter_device: str = 'cpu'
    num_intra_threads: int = 0
    num_inter_threads: int = 0

    def __post_init__(self):
        _require(self.device in DEVICES, '--device must be one of %s, got %r', DEVICES,
                 self.device)
        _require(self.local_parameter_device in DEVICES,
                 '--local_parameter_device must be one of %s, got %r', DEVICES,
                 self.local_parameter_device)
        _require(self.num_devices >= 1, '--num_devices must be >= 1, got %s', self.num_devices)
        _require(not (self.device == 'cpu' and self.local_parameter_device == 'gpu'),
                 '--local_parameter_device=gpu needs --device=gpu')


VARIABLE_UPDATES = ('parameter_server', 'replicated', 'independent')
# Need a cluster (tfhp.cluster): variables copied per worker device, or no parameter server at all.
DISTRIBUTED_VARIABLE_UPDATES = ('distributed_replicated', 'collective_all_reduce')
VARIABLE_UPDATES += DISTRIBUTED_VARIABLE_UPDATES
# Variable updates that all-reduce gradients (the ones --all_reduce_spec and packing apply to).
ALL_REDUCE_UPDATES = ('replicated',)
TRANSFER_DTYPES = ('float32', 'float16', 'bfloat16')


@dataclasses.dataclass(frozen=True)
class ReplicationConfig:
    """How variables are placed and gradients aggregated across towers.

    Attributes:
      variable_update: one of VARIABLE_UPDATES.
      all_reduce_spec: all-reduce algorithm(s) for the all-reduce updates, in tf_cnn_benchmarks'
        syntax (`tfhp.ops.allreduce_spec`); '' picks the default (copy to the local parameter
        device, or --hierarchical_copy).
      hierarchical_copy: all-reduce in two groups of towers, then across the groups.
      gradient_repacking: if > 0, concatenate all gradients and cut them into this many packs
        before the all-reduce.
      agg_small_grads_max_bytes: if > 0, concatenate runs of gradients of at most this many
        bytes (at most agg_small_grads_max_group per pack) before the all-reduce.
      agg_small_grads_max_group: see agg_small_grads_max_bytes.
      gradient_transfer_dtype: cast float32 gradients to this dtype for the all-reduce.
      staged_vars: parameter_server reads variables through staging areas (one-step-stale
        weights; see tfhp.replication.staged_vars).
    """
    variable_update: str = 'parameter_server'
    all_reduce_spec: str = ''
    hierarchical_copy: bool = False
    gradient_repacking: int = 0
    agg_small_grads_max_bytes: int = 0
    agg_small_grads_max_group: int = 10
    gradient_transfer_dtype: str = 'float32'
    staged_vars: bool = False

    def __post_init__(self):
        _require(self.variable_update in VARIABLE_UPDATES,
                 '--variable_update must be one of %s, got %r', VARIABLE_UPDATES,
                 self.variable_update)
        self._check_all_reduce()
        _require(not self.staged_vars or self.variable_update == 'parameter_server',
                 '--staged_vars works with --variable_update=parameter_server only, got %r',
                 self.variable_update)

    def _check_all_reduce(self):
        if self.all_reduce_spec:
            try:
                allreduce_spec.parse(self.all_reduce_spec)
            except ValueError as e:
                raise ConfigError('--%s' % e) from None
        _require(self.gradient_repacking >= 0, '--gradient_repacking must be >= 0, got %s',
                 self.gradient_repacking)
        _require(self.agg_small_grads_max_bytes >= 0,
                 '--agg_small_grads_max_bytes must be >= 0, got %s',
                 self.agg_small_grads_max_bytes)
        _require(self.agg_small_grads_max_group >= 1,
                 '--agg_small_grads_max_group must be >= 1, got %s',
                 self.agg_small_grads_max_group)
        _require(not (self.gradient_repacking and self.agg_small_grads_max_bytes),
                 '--gradient_repacking and --agg_small_grads_max_bytes both pack gradients; '
                 'use one')
        _require(self.gradient_transfer_dtype in TRANSFER_DTYPES,
                 '--gradient_transfer_dtype must be one of %s, got %r', TRANSFER_DTYPES,
                 self.gradient_transfer_dtype)
        used = [flag for flag, value in (
            ('--all_reduce_spec', self.all_reduce_spec),
            ('--hierarchical_copy', self.hierarchical_copy),
            ('--gradient_repacking', self.gradient_repacking),
            ('--agg_small_grads_max_bytes', self.agg_small_grads_max_bytes),
            ('--gradient_transfer_dtype', self.gradient_transfer_dtype != 'float32')) if value]
        _require(not used or self.variable_update in ALL_REDUCE_UPDATES,
                 '%s applies to --variable_update in %s only, got %r', ', '.join(used),
                 ALL_REDUCE_UPDATES, self.variable_update)
        _require(not (self.all_reduce_spec and self.hierarchical_copy),
                 '--hierarchical_copy and --all_reduce_spec both choose the all-reduce; use one')


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """How long to run, what to print and where to write.

    Attributes:
      num_batches: timed steps.
      num_warmup_batches: untimed steps first (graph optimisation, allocator warm-up).
      display_every: print a progress line every this many steps.
      tf_random_seed: seed of every random op (synthetic data, initialisers, shuffling).
      train_dir: checkpoints are written here and a run resumes from the latest one.
      save_model_steps: also checkpoint every this many steps (None: only at the end).
      eval: evaluate the checkpoint in train_dir (top-1/top-5) instead of training.
      print_training_accuracy: compute and print top-1/top-5 of training batches.
      result_file: append one JSON line per run here.
      max_ckpts_to_keep: checkpoints kept in train_dir, oldest deleted first; 0 keeps every one
        (experiments evaluate each of them afterwards).
    """
    num_batches: int = 100
    num_warmup_batches: int = 10
    display_every: int = 10
    tf_random_seed: int = 1234
    train_dir: Optional[str] = None
    save_model_steps: Optional[int] = None
    eval: bool = False
    print_training_accuracy: bool = False
    result_file: Optional[str] = None
    max_ckpts_to_keep: int = 3

    def __post_init__(self):
        _require(self.max_ckpts_to_keep >= 0, '--max_ckpts_to_keep must be >= 0, got %s',
                 self.max_ckpts_to_keep)
        _require(self.num_batches >= 1, '--num_batches must be >= 1, got %s', self.num_batches)
        _require(self.num_warmup_batches >= 0, '--num_warmup_batches must be >= 0, got %s',
                 self.num_warmup_batches)
        _require(self.display_every >= 1, '--display_every must be >= 1, got %s',
                 self.display_every)
        _require(self.save_model_steps is None or self.save_model_steps >= 1,
                 '--save_model_steps must be >= 1, got %s', self.save_model_steps)
        _require(self.save_model_steps is None or self.train_dir,
                 '--save_model_steps needs --train_dir')
        _require(not self.eval or self.train_dir,
                 '--eval needs --train_dir (the checkpoint to evaluate)')


JOB_NAMES = ('ps', 'worker', 'controller')
GRAPH_MODES = ('between_graph', 'in_graph')
_ADDRESS = re.compile(r'^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):([0-9]{1,5})$')


def check_address(address, flag):
    """Raises ConfigError unless `address` is host:port with a port in 1..65535."""
    match = _ADDRESS.match(address)
    _require(match and 0 < int(match.group(2)) < 65536,
             '%s: %r is not a host:port address (port 1-65535)', flag, address)


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """A multi-process job on TensorFlow's gRPC runtime (tfhp.cluster); empty: one process.

    Attributes:
      job_name: this task's job: 'ps', 'worker' or 'controller'; '' when there is no cluster.
      task_index: this task's index in its job.
      ps_hosts, worker_hosts: host:port of every task of each job.
      controller_host: host:port of the in-graph client when it is not worker 0.
      graph_mode: 'between_graph' (a graph per worker) or 'in_graph' (one client builds towers
        on every worker and drives them through one session).
      cross_replica_sync: synchronous steps (SyncReplicasOptimizer or all-reduce); False:
        every worker applies its own gradients as soon as they are ready.
      replicas_to_aggregate: gradients that make one synchronous step (None: every worker);
        fewer than total_num_replicas leaves the rest as spare (backup) replicas.
      total_num_replicas: workers taking part in synchronous steps (None: every worker).
      straggler_workers: worker indices that sleep straggler_delay_ms before every step.
      straggler_delay_ms: injected delay, for experiments on stragglers and spares.
      peer_timeout_s: bound on waiting for a peer task to answer or for the chief's init.
      step_timeout_s: bound on one step (a synchronous step waits for other workers).
      save_model_secs: the chief also checkpoints every this many seconds (None: off).
      partition_min_bytes: variables of at least this many bytes are split over the ps tasks
        in equal slices (a fixed-size partitioner); 0 never splits.
    """
    job_name: str = ''
    task_index: int = 0
    ps_hosts: Tuple[str, ...] = ()
    worker_hosts: Tuple[str, ...] = ()
    controller_host: str = ''
    graph_mode: str = 'between_graph'
    cross_replica_sync: bool = True
    replicas_to_aggregate: Optional[int] = None
    total_num_replicas: Optional[int] = None
    straggler_workers: Tuple[int, ...] = ()
    straggler_delay_ms: float = 0.0
    peer_timeout_s: float = 60.0
    step_timeout_s: float = 600.0
    save_model_secs: Optional[float] = None
    partition_min_bytes: int = 0

    def __post_init__(self):
        if not self.job_name:
            _require(not (self.ps_hosts or self.worker_hosts or self.controller_host),
                     '--ps_hosts/--worker_hosts/--controller_host need --job_name')
            return
        _require(self.job_name in JOB_NAMES, '--job_name must be one of %s, got %r', JOB_NAMES,
                 self.job_name)
        _require(self.worker_hosts, '--job_name=%s needs --worker_hosts', self.job_name)
        for flag, hosts in (('--ps_hosts', self.ps_hosts), ('--worker_hosts', self.worker_hosts),
                            ('--controller_host', (self.controller_host,) if
                             self.controller_host else ())):
            for address in hosts:
                check_address(address, flag)
        every = list(self.ps_hosts) + list(self.worker_hosts) + [self.controller_host]
        duplicates = sorted(set(a for a in every if a and every.count(a) > 1))
        _require(not duplicates, 'address %s is given to more than one task', duplicates)
        num_tasks = len(self.hosts(self.job_name))
        _require(0 <= self.task_index < num_tasks,
                 '--task_index=%d is outside job %r, which has %d task(s)', self.task_index,
                 self.job_name, num_tasks)
        _require(self.graph_mode in GRAPH_MODES, '--graph_mode must be one of %s, got %r',
                 GRAPH_MODES, self.graph_mode)
        _require(self.graph_mode == 'in_graph' or not self.controller_host,
                 '--controller_host needs --graph_mode=in_graph')
        num_workers = len(self.worker_hosts)
        _require(self.total_num_replicas in (None, num_workers),
                 '--total_num_replicas=%s but --worker_hosts lists %d worker(s)',
                 self.total_num_replicas, num_workers)
        _require(self.replicas_to_aggregate is None or
                 1 <= self.replicas_to_aggregate <= num_workers,
                 '--replicas_to_aggregate=%s must be in 1..%d (the number of workers)',
                 self.replicas_to_aggregate, num_workers)
        _require(self.cross_replica_sync or self.replicas_to_aggregate is None,
                 '--replicas_to_aggregate needs --cross_replica_sync')
        bad = [w for w in self.straggler_workers if not 0 <= w < num_workers]
        _require(not bad, '--straggler_workers %s: no such worker (there are %d)', bad,
                 num_workers)
        _require(self.straggler_delay_ms >= 0, '--straggler_delay_ms must be >= 0, got %s',
                 self.straggler_delay_ms)
        _require(self.peer_timeout_s > 0, '--peer_timeout_s must be positive, got %s',
                 self.peer_timeout_s)
        _require(self.step_timeout_s > 0, '--step_timeout_s must be positive, got %s',
                 self.step_timeout_s)
        _require(self.save_model_secs is None or self.save_model_secs > 0,
                 '--save_model_secs must be positive, got %s', self.save_model_secs)
        _require(self.partition_min_bytes >= 0, '--partition_min_bytes must be >= 0, got %s',
                 self.partition_min_bytes)

    @property
    def enabled(self):
        """Whether this process is one task of a cluster."""
        return bool(self.job_name)

    @property
    def num_workers(self):
        return len(self.worker_hosts)

    def hosts(self, job_name):
        """Addresses of the tasks of `job_name`."""
        if job_name == 'controller':
            return (self.controller_host,) if self.controller_host else ()
        return {'ps': self.ps_hosts, 'worker': self.worker_hosts}[job_name]

    def jobs(self):
        """{job name: addresses} of every non-empty job (a ClusterSpec's dict)."""
        return {job: list(self.hosts(job)) for job in JOB_NAMES if self.hosts(job)}


SUMMARY_VERBOSITIES = (0, 1, 2, 3)


@dataclasses.dataclass(frozen=True)
class ProfileConfig:
    """Tracing one step and TensorBoard summaries (tfhp.profiling).

    Attributes:
      trace_file: write a Chrome trace of one training step here (and its RunMetadata to
        trace_file + '.runmeta.pb', which `python -m tfhp.trace` reads).
      trace_step: trace before this timed step (1-based); the traced step is an extra, untimed
        step, since FULL_TRACE slows it down.
      trace_memory: include tensor allocations and allocator use in the Chrome trace.
      summary_verbosity: 0 none, 1 loss/learning rate/images per sec, 2 also gradient norms,
        3 also gradient histograms.
      save_summaries_steps: write summaries (and the graph) to train_dir every this many timed
        steps; 0 writes none.
    """
    trace_file: Optional[str] = None
    trace_step: int = 1
    trace_memory: bool = False
    summary_verbosity: int = 1
    save_summaries_steps: int = 0

    def __post_init__(self):
        _require(self.trace_step >= 1, '--trace_step must be >= 1, got %s', self.trace_step)
        _require(self.trace_file or not self.trace_memory, '--trace_memory needs --trace_file')
        _require(self.summary_verbosity in SUMMARY_VERBOSITIES,
                 '--summary_verbosity must be one of %s, got %s', SUMMARY_VERBOSITIES,
                 self.summary_verbosity)
        _require(self.save_summaries_steps >= 0, '--save_summaries_steps must be >= 0, got %s',
                 self.save_summaries_steps)


def _check_in_graph_replication(cfg):
    """Replication settings that depend on other sections (devices, run, cluster)."""
    replication = cfg.replication
    spec = replication.all_reduce_spec
    _require(not spec or 'nccl' not in allreduce_spec.algorithm_names(spec) or
             cfg.device.device == 'gpu', '--all_reduce_spec=%s uses nccl, which runs on GPUs '
             'only; with --device=cpu use xring, pscpu, psgpu or collective', spec)
    _require(not (replication.staged_vars and cfg.run.eval),
             '--staged_vars stages training reads; it does not apply with --eval')
    in_graph = not cfg.cluster.job_name or cfg.cluster.graph_mode == 'in_graph'
    in_graph_async = in_graph and not cfg.cluster.cross_replica_sync
    _require(not in_graph_async or (replication.variable_update == 'parameter_server' and
                                    not replication.staged_vars),
             'in-graph asynchronous training (--cross_replica_sync=false in one process or '
             'with --graph_mode=in_graph) needs --variable_update=parameter_server without '
             '--staged_vars')
    _require(not in_graph_async or not (cfg.profile.trace_file or
                                        cfg.profile.save_summaries_steps),
             'in-graph asynchronous training runs one step per thread: --trace_file and '
             '--save_summaries_steps do not apply')


def _check_cluster(cfg):
    """Cluster settings that depend on other sections (replication, run)."""
    cluster, update = cfg.cluster, cfg.replication.variable_update
    _require(cluster.enabled or update not in DISTRIBUTED_VARIABLE_UPDATES,
             '--variable_update=%s needs a cluster (--job_name, --worker_hosts, ... or TF_CONFIG)',
             update)
    _require(cluster.save_model_secs is None or cfg.run.train_dir,
             '--save_model_secs needs --train_dir')
    _require(not cluster.partition_min_bytes or update == 'parameter_server',
             '--partition_min_bytes splits parameter-server variables; it needs '
             '--variable_update=parameter_server, got %r', update)
    if not cluster.enabled:
        return
    _require(not cfg.run.eval, '--eval runs in one process; drop --job_name')
    _require(not cfg.replication.staged_vars, '--staged_vars is for one-process runs')
    if cluster.graph_mode == 'in_graph':
        _require(update not in DISTRIBUTED_VARIABLE_UPDATES,
                 '--variable_update=%s builds a graph per worker; use '
                 '--graph_mode=between_graph', update)
        _require(cluster.replicas_to_aggregate is None,
                 '--replicas_to_aggregate (spare replicas) needs --graph_mode=between_graph')
        _require(cluster.cross_replica_sync or update == 'parameter_server',
                 'in-graph asynchronous training (--cross_replica_sync=false) needs '
                 '--variable_update=parameter_server')
        return
    _require(update in ('parameter_server',) + DISTRIBUTED_VARIABLE_UPDATES,
             '--variable_update=%s is in-graph; between-graph jobs take parameter_server, %s',
             update, ', '.join(DISTRIBUTED_VARIABLE_UPDATES))
    _require(cluster.job_name != 'ps' or cluster.ps_hosts, '--job_name=ps needs --ps_hosts')
    if update == 'collective_all_reduce':
        _require(cluster.cross_replica_sync,
                 '--variable_update=collective_all_reduce is synchronous; drop '
                 '--cross_replica_sync=false')
        _require(cluster.replicas_to_aggregate in (None, cluster.num_workers),
                 '--variable_update=collective_all_reduce has no spare replicas; drop '
                 '--replicas_to_aggregate')
    else:
        _require(cluster.ps_hosts, '--variable_update=%s between workers needs --ps_hosts',
                 update)


@dataclasses.dataclass(frozen=True)
class DataConfig:
    """Where input comes from and how the input pipeline is built (tfhp.pipelines).

    Attributes:
      data_dir: directory of TFRecord shards in the ImageNet format; None: synthetic data.
      data_name: the data set's expected name ('imagenet', or the name in the directory's
        dataset_info.json); None accepts what the directory holds.
      use_datasets: read through tf.data instead of RecordInput + staging.
      datasets_num_private_threads: tf.data private thread pool size (0: shared pool).
      datasets_prefetch_buffer_size: batches tf.data prefetches on the host.
      record_input_parallelism: RecordInput reader threads.
      record_input_buffer_size: records in RecordInput's shuffle buffer.
      record_input_shift_ratio: fraction of the file list RecordInput readers skip at the
        start (workers sharing files use task / num_workers).
      distortions: random crop and flip of training images.
      distort_color: random colour distortion of training images.
      staged_input: software-pipeline input and compute (staging areas, warm-up); false runs
        read, preprocess and compute one after another each step.
      skip_corrupt_records: skip and count records that fail to parse or decode.
      input_only: time the input pipeline alone (no model).
    """
    data_dir: Optional[str] = None
    data_name: Optional[str] = None
    use_datasets: bool = False
    datasets_num_private_threads: int = 0
    datasets_prefetch_buffer_size: int = 1
    record_input_parallelism: int = 16
    record_input_buffer_size: int = 10000
    record_input_shift_ratio: float = 0.0
    distortions: bool = True
    distort_color: bool = False
    staged_input: bool = True
    skip_corrupt_records: bool = False
    input_only: bool = False

    def __post_init__(self):
        for flag in ('data_name', 'use_datasets', 'skip_corrupt_records'):
            _require(self.data_dir or not getattr(self, flag),
                     '--%s needs --data_dir (synthetic data has no files)', flag)
        _require(self.datasets_num_private_threads >= 0,
                 '--datasets_num_private_threads must be >= 0, got %s',
                 self.datasets_num_private_threads)
        _require(self.datasets_prefetch_buffer_size >= 1,
                 '--datasets_prefetch_buffer_size must be >= 1, got %s',
                 self.datasets_prefetch_buffer_size)
        _require(self.record_input_parallelism >= 1,
                 '--record_input_parallelism must be >= 1, got %s',
                 self.record_input_parallelism)
        _require(self.record_input_buffer_size >= 1,
                 '--record_input_buffer_size must be >= 1, got %s',
                 self.record_input_buffer_size)
        _require(0.0 <= self.record_input_shift_ratio < 1.0,
                 '--record_input_shift_ratio must be in [0, 1), got %s',
                 self.record_input_shift_ratio)


@dataclasses.dataclass(frozen=True)
class StalenessConfig:
    """Gradient staleness of asynchronous updates: measuring it, and remedies for it.

    Staleness is the number of updates applied between a replica's read of the weights and
    the apply of its gradient (`tfhp.replication.staleness`). Asynchronous parameter-server
    training always measures it; the remedies apply to asynchronous training only.

    Attributes:
      measure_staleness: also measure it in synchronous in-graph runs (where it must be 0).
      max_gradient_staleness: drop (zero) gradients older than this many updates; None keeps
        every gradient.
      scale_stale_gradients: scale each gradient by 1/staleness (staleness 0 and 1 unscaled).
      async_warmup_steps: the first replica trains alone for this many global steps before
        the others join (in-graph: extra timed steps of tower 0's replica; between graphs: the
        chief's first steps, while the other workers wait).
    """
    measure_staleness: bool = False
    max_gradient_staleness: Optional[int] = None
    scale_stale_gradients: bool = False
    async_warmup_steps: int = 0

    def __post_init__(self):
        _require(self.max_gradient_staleness is None or self.max_gradient_staleness >= 0,
                 '--max_gradient_staleness must be >= 0, got %s', self.max_gradient_staleness)
        _require(self.async_warmup_steps >= 0, '--async_warmup_steps must be >= 0, got %s',
                 self.async_warmup_steps)

    @property
    def remedies(self):
        """The flags of the remedies in use (empty when none is)."""
        return [flag for flag, value in (
            ('--max_gradient_staleness', self.max_gradient_staleness is not None),
            ('--scale_stale_gradients', self.scale_stale_gradients),
            ('--async_warmup_steps', self.async_warmup_steps)) if value]


def _check_staleness(cfg):
    """Staleness settings that depend on the cluster and replication sections."""
    remedies = cfg.staleness.remedies
    _require(not remedies or not cfg.cluster.cross_replica_sync,
             '%s apply to asynchronous training: add --cross_replica_sync=false',
             ', '.join(remedies))
    _require(not remedies or cfg.replication.variable_update == 'parameter_server',
             '%s need --variable_update=parameter_server, got %r', ', '.join(remedies),
             cfg.replication.variable_update)
    chief_steps = cfg.run.num_warmup_batches + cfg.run.num_batches
    _require(not (cfg.cluster.enabled and cfg.cluster.graph_mode == 'between_graph' and
                  cfg.staleness.async_warmup_steps > chief_steps),
             '--async_warmup_steps=%d: the chief takes only %d steps (--num_warmup_batches + '
             '--num_batches), so the other workers would never join',
             cfg.staleness.async_warmup_steps, chief_steps)
    _require(not (cfg.staleness.measure_staleness and cfg.cluster.enabled and
                  cfg.cluster.graph_mode == 'between_graph'),
             '--measure_staleness applies in-graph: between-graph synchronous steps drop late '
             'gradients (counted in dropped_gradients), and asynchronous jobs always measure it')


@dataclasses.dataclass(frozen=True)
class BenchmarkConfig:
    """Everything one benchmark run needs; built once from flags."""
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    optimizer: OptimizerConfig = dataclasses.field(default_factory=OptimizerConfig)
    device: DeviceConfig = dataclasses.field(default_factory=DeviceConfig)
    replication: ReplicationConfig = dataclasses.field(default_factory=ReplicationConfig)
    run: RunConfig = dataclasses.field(default_factory=RunConfig)
    cluster: ClusterConfig = dataclasses.field(default_factory=ClusterConfig)
    profile: ProfileConfig = dataclasses.field(default_factory=ProfileConfig)
    data: DataConfig = dataclasses.field(default_factory=DataConfig)
    staleness: StalenessConfig = dataclasses.field(default_factory=StalenessConfig)

    def __post_init__(self):
        # Profiling settings that depend on other sections.
        profile, run = self.profile, self.run
        _require(not (profile.trace_file and run.eval), '--trace_file traces a training step; '
                 'it does not apply with --eval')
        _require(not profile.trace_file or profile.trace_step <= run.num_batches,
                 '--trace_step=%d is after the last step (--num_batches=%d)', profile.trace_step,
                 run.num_batches)
        writes_summaries = profile.save_summaries_steps and profile.summary_verbosity
        _require(not writes_summaries or (run.train_dir and not run.eval),
                 '--save_summaries_steps writes training summaries to --train_dir: it needs '
                 '--train_dir and does not apply with --eval')
        _check_in_graph_replication(self)
        _check_cluster(self)
        _check_staleness(self)
        _require(not (self.data.input_only and (run.eval or run.train_dir or
                                                self.cluster.job_name)),
                 '--input_only times this process\'s input pipeline alone; it does not apply '
                 'with --eval, --train_dir or a cluster job')

    def to_dict(self):
        """A JSON-serialisable dict of every setting (for result files)."""
        return dataclasses.asdict(self)

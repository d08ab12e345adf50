"""Plain, frozen configuration objects, one per concern, validated on construction.

Flags are parsed once at the edge (`tfhp.cli`, experiment scripts) and turned into a
`BenchmarkConfig`; library code takes explicit arguments unpacked from these objects and never
reads flags. Every check that needs no TensorFlow lives here, so that a flag that cannot work is
refused before any graph is built; checks that need to ask the runtime (is there a GPU, does
this build run NCHW) live in `tfhp.runner.devices`.

  errors.py       ConfigError; `require`, the check every section raises it through, and
                  require_choice / require_at_least / require_positive for single fields
  model.py        ModelConfig (network, batch and image size, data format)
  optimizer.py    OptimizerConfig and parse_piecewise_schedule
  device.py       DeviceConfig (cpu/gpu, towers per process, thread pools)
  replication.py  ReplicationConfig and the variable_update / all-reduce names
  run.py          RunConfig (steps, seed, checkpoints, eval, result file)
  cluster.py      ClusterConfig (jobs, graph mode, sync, stragglers) and check_address
  profile.py      ProfileConfig (step trace, summaries)
  data.py         DataConfig (data directory, RecordInput or tf.data settings)
  paths.py        check_output_paths: every output path writable (--train_dir, --result_file,
                  --trace_file, --tfprof_file, --graph_file, --partitioned_graph_file_prefix)
  staleness.py    StalenessConfig (measuring stale gradients, and remedies)
  precision.py    PrecisionConfig (compute and variable dtypes, float16 loss scaling)
  xla.py          XlaConfig (compiling towers, auto-clustering)
  evaluation.py   EvalConfig (evaluation batches, evaluating while training, stopping at an
                  accuracy)
  benchmark.py    BenchmarkConfig, and the checks that span sections
  tf_config.py    TF_CONFIG (a cluster manager's) read into ClusterConfig fields
  slurm.py        the same fields from Slurm's environment, for tasks that srun starts

Each section checks only its own fields; a check that reads two sections lives in
benchmark.py. The names below are re-exported so that callers write `config_lib.ModelConfig`.
"""
from tfhp.config import benchmark
from tfhp.config import cluster
from tfhp.config import data
from tfhp.config import device
from tfhp.config import errors
from tfhp.config import evaluation
from tfhp.config import model
from tfhp.config import optimizer
from tfhp.config import paths
from tfhp.config import precision
from tfhp.config import profile
from tfhp.config import replication
from tfhp.config import run
from tfhp.config import staleness
from tfhp.config import xla

ConfigError = errors.ConfigError

DATA_FORMATS = model.DATA_FORMATS
ModelConfig = model.ModelConfig

OPTIMIZERS = optimizer.OPTIMIZERS
OptimizerConfig = optimizer.OptimizerConfig
parse_piecewise_schedule = optimizer.parse_piecewise_schedule

DEVICES = device.DEVICES
KMP_DEFAULTS = device.KMP_DEFAULTS
DeviceConfig = device.DeviceConfig

VARIABLE_UPDATES = replication.VARIABLE_UPDATES
DISTRIBUTED_VARIABLE_UPDATES = replication.DISTRIBUTED_VARIABLE_UPDATES
ALL_REDUCE_UPDATES = replication.ALL_REDUCE_UPDATES
TRANSFER_DTYPES = replication.TRANSFER_DTYPES
VARIABLE_CONSISTENCIES = replication.VARIABLE_CONSISTENCIES
ReplicationConfig = replication.ReplicationConfig
DEFAULT_RING_SUBDIVS = replication.DEFAULT_RING_SUBDIVS

RunConfig = run.RunConfig

JOB_NAMES = cluster.JOB_NAMES
GRAPH_MODES = cluster.GRAPH_MODES
STRAGGLER_MODES = cluster.STRAGGLER_MODES
check_address = cluster.check_address
ClusterConfig = cluster.ClusterConfig

SUMMARY_VERBOSITIES = profile.SUMMARY_VERBOSITIES
PROFILED_STEPS = profile.PROFILED_STEPS
ProfileConfig = profile.ProfileConfig

IMAGE_DTYPES = data.IMAGE_DTYPES
DataConfig = data.DataConfig

check_output_paths = paths.check_output_paths
writes_train_dir = paths.writes_train_dir

StalenessConfig = staleness.StalenessConfig

COMPUTE_DTYPES = precision.COMPUTE_DTYPES
PrecisionConfig = precision.PrecisionConfig

XlaConfig = xla.XlaConfig

EvalConfig = evaluation.EvalConfig

BenchmarkConfig = benchmark.BenchmarkConfig
all_reduce_replication = benchmark.all_reduce_replication
determinism_caveat = benchmark.determinism_caveat

"""Plain, frozen configuration objects, one per concern, validated on construction.

Flags are parsed once at the edge (`tfhp.cli`, experiment scripts) and turned into a
`BenchmarkConfig`; library code takes explicit arguments unpacked from these objects and never
reads flags. Every check that needs no TensorFlow lives here, so that a flag that cannot work is
refused before any graph is built; checks that need to ask the runtime (is there a GPU, does
this build run NCHW) live in `tfhp.devices`.
"""
import dataclasses
from typing import Optional

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


VARIABLE_UPDATES = ('parameter_server',)


@dataclasses.dataclass(frozen=True)
class ReplicationConfig:
    """How variables are placed and gradients aggregated across towers.

    Attributes:
      variable_update: one of VARIABLE_UPDATES.
    """
    variable_update: str = 'parameter_server'

    def __post_init__(self):
        _require(self.variable_update in VARIABLE_UPDATES,
                 '--variable_update must be one of %s, got %r', VARIABLE_UPDATES,
                 self.variable_update)


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

    def __post_init__(self):
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


@dataclasses.dataclass(frozen=True)
class BenchmarkConfig:
    """Everything one benchmark run needs; built once from flags."""
    model: ModelConfig = dataclasses.field(default_factory=ModelConfig)
    optimizer: OptimizerConfig = dataclasses.field(default_factory=OptimizerConfig)
    device: DeviceConfig = dataclasses.field(default_factory=DeviceConfig)
    replication: ReplicationConfig = dataclasses.field(default_factory=ReplicationConfig)
    run: RunConfig = dataclasses.field(default_factory=RunConfig)

    def to_dict(self):
        """A JSON-serialisable dict of every setting (for result files)."""
        return dataclasses.asdict(self)

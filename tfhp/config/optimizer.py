"""OptimizerConfig and the piecewise learning-rate schedule it checks."""
import dataclasses
from typing import Optional

from tfhp.config import errors

OPTIMIZERS = ('sgd', 'momentum', 'rmsprop', 'adam')


@dataclasses.dataclass(frozen=True)
class OptimizerConfig:
    """Optimizer, learning-rate schedule, regularisation and clipping.

    Attributes:
      optimizer: one of OPTIMIZERS.
      learning_rate: base rate (tf_cnn_benchmarks' --init_learning_rate); None takes the
        model's default.
      momentum: for 'momentum' and 'rmsprop'.
      rmsprop_decay, rmsprop_epsilon: RMSProp settings (reference-benchmark defaults).
      adam_beta1, adam_beta2, adam_epsilon: Adam settings.
      weight_decay: L2 coefficient on weights (not biases or batch-norm parameters).
      gradient_clip: clip each tower's gradients to [-clip, clip]; None disables.
      piecewise_learning_rate_schedule: 'r0;e1;r1;e2;r2...': rate r0 until epoch e1, then r1...
        (overrides learning_rate).
      num_epochs_per_decay, learning_rate_decay_factor: exponential staircase decay: the rate
        is multiplied by the factor every this many epochs (both or neither; not with a
        piecewise schedule).
      minimum_learning_rate: the decayed rate never goes below this (needs the decay).
      num_learning_rate_warmup_epochs: linear warm-up from 0 over this many epochs.
      resnet_base_lr: ResNets' default rate at 256 images per device: the rate is
        resnet_base_lr * batch / 256 when no rate is given (ResNet models only).
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
    num_epochs_per_decay: float = 0.0
    learning_rate_decay_factor: float = 0.0
    minimum_learning_rate: float = 0.0
    num_learning_rate_warmup_epochs: float = 0.0
    learning_rate_base_batch_size: int = 0
    resnet_base_lr: Optional[float] = None

    def __post_init__(self):
        errors.require_choice(self, 'optimizer', OPTIMIZERS)
        errors.require_positive(self, 'learning_rate', 'gradient_clip', optional=True)
        errors.require_at_least(self, 0, 'weight_decay', 'num_learning_rate_warmup_epochs',
                                'learning_rate_base_batch_size')
        if self.piecewise_learning_rate_schedule:
            parse_piecewise_schedule(self.piecewise_learning_rate_schedule)
        errors.require_at_least(self, 0, 'num_epochs_per_decay', 'minimum_learning_rate')
        errors.require(0 <= self.learning_rate_decay_factor <= 1,
                       '--learning_rate_decay_factor must be in [0, 1], got %s',
                       self.learning_rate_decay_factor)
        errors.require(bool(self.num_epochs_per_decay) == bool(self.learning_rate_decay_factor),
                       '--num_epochs_per_decay and --learning_rate_decay_factor make one '
                       'decay: set both')
        errors.require(not (self.decays and self.piecewise_learning_rate_schedule),
                       '--piecewise_learning_rate_schedule and --num_epochs_per_decay both '
                       'set the schedule; use one')
        errors.require(not self.minimum_learning_rate or self.decays,
                       '--minimum_learning_rate bounds a decay: it needs '
                       '--num_epochs_per_decay and --learning_rate_decay_factor')
        errors.require_positive(self, 'resnet_base_lr', optional=True)
        errors.require(self.resnet_base_lr is None or self.learning_rate is None,
                       '--resnet_base_lr scales the ResNets\' default rate; it does not apply '
                       'with --learning_rate (--init_learning_rate)')
        errors.require(self.resnet_base_lr is None or not self.piecewise_learning_rate_schedule,
                       '--resnet_base_lr scales the ResNets\' default rate; a '
                       '--piecewise_learning_rate_schedule sets every rate itself')

    @property
    def decays(self):
        """Whether the rate decays exponentially (--num_epochs_per_decay)."""
        return bool(self.num_epochs_per_decay)


def parse_piecewise_schedule(text):
    """Parses 'r0;e1;r1;...' into (boundaries_in_epochs, rates); ConfigError if malformed."""
    parts = text.split(';')
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise errors.ConfigError('--piecewise_learning_rate_schedule %r: every item must be a '
                                 'number' % text) from None
    errors.require(len(values) % 2 == 1, '--piecewise_learning_rate_schedule %r must be '
                   'rate;epoch;rate;...;rate (an odd number of items)', text)
    rates, boundaries = values[0::2], values[1::2]
    errors.require(all(b > a for a, b in zip(boundaries, boundaries[1:])),
                   '--piecewise_learning_rate_schedule %r: epochs must increase', text)
    errors.require(all(r > 0 for r in rates),
                   '--piecewise_learning_rate_schedule %r: rates must be positive', text)
    return boundaries, rates

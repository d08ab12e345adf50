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
        errors.require_choice(self, 'optimizer', OPTIMIZERS)
        errors.require_positive(self, 'learning_rate', 'gradient_clip', optional=True)
        errors.require_at_least(self, 0, 'weight_decay', 'num_learning_rate_warmup_epochs',
                                'learning_rate_base_batch_size')
        if self.piecewise_learning_rate_schedule:
            parse_piecewise_schedule(self.piecewise_learning_rate_schedule)


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

"""StalenessConfig: measuring gradient staleness of asynchronous updates, and remedies."""
import dataclasses
from typing import Optional

from tfhp.config import errors


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
        errors.require_at_least(self, 0, 'max_gradient_staleness', optional=True)
        errors.require_at_least(self, 0, 'async_warmup_steps')

    @property
    def remedies(self):
        """The flags of the remedies in use (empty when none is)."""
        return [flag for flag, value in (
            ('--max_gradient_staleness', self.max_gradient_staleness is not None),
            ('--scale_stale_gradients', self.scale_stale_gradients),
            ('--async_warmup_steps', self.async_warmup_steps)) if value]

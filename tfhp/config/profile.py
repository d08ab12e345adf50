"""ProfileConfig: tracing one step and TensorBoard summaries."""
import dataclasses
from typing import Optional

from tfhp.config import errors

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
        errors.require_at_least(self, 1, 'trace_step')
        errors.require_at_least(self, 0, 'save_summaries_steps')
        errors.require(self.trace_file or not self.trace_memory,
                       '--trace_memory needs --trace_file')
        errors.require_choice(self, 'summary_verbosity', SUMMARY_VERBOSITIES)

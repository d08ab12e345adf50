"""ProfileConfig: tracing and profiling steps, writing the graph, TensorBoard summaries."""
import dataclasses
from typing import Optional

from tfhp.config import errors

SUMMARY_VERBOSITIES = (0, 1, 2, 3)
# Steps --tfprof_file profiles (tf_cnn_benchmarks profiles its first 10).
PROFILED_STEPS = 10


@dataclasses.dataclass(frozen=True)
class ProfileConfig:
    """Tracing and profiling steps, the graph, TensorBoard summaries (tfhp.profiling).

    Attributes:
      trace_file: write a Chrome trace of one training step here (and its RunMetadata to
        trace_file + '.runmeta.pb', which `python -m tfhp.trace` reads).
      use_chrome_trace_format: False writes the step's StepStats (text proto) to trace_file
        instead of the Chrome trace.
      trace_step: trace before this timed step (1-based); the traced step is an extra, untimed
        step, since FULL_TRACE slows it down.
      trace_memory: include tensor allocations and allocator use in the Chrome trace.
      summary_verbosity: 0 none, 1 loss/learning rate/images per sec, 2 also gradient norms,
        3 also gradient histograms.
      save_summaries_steps: write summaries (and the graph) to train_dir every this many timed
        steps; 0 writes none.
      tfprof_file: profile PROFILED_STEPS extra, untimed steps after the warm-up with the
        tfprof profiler, write its ProfileProto here and print the costliest ops.
      graph_file: write the graph's GraphDef here (text when the name ends in 'txt').
      partitioned_graph_file_prefix: write the graph of each device, as partitioned and
        optimised by the runtime for one extra, untimed step, to <prefix><device>[.ext].
    """
    trace_file: Optional[str] = None
    use_chrome_trace_format: bool = True
    trace_step: int = 1
    trace_memory: bool = False
    summary_verbosity: int = 1
    save_summaries_steps: int = 0
    tfprof_file: Optional[str] = None
    graph_file: Optional[str] = None
    partitioned_graph_file_prefix: Optional[str] = None

    def __post_init__(self):
        errors.require_at_least(self, 1, 'trace_step')
        errors.require_at_least(self, 0, 'save_summaries_steps')
        errors.require(self.trace_file or not self.trace_memory,
                       '--trace_memory needs --trace_file')
        errors.require(self.use_chrome_trace_format or not self.trace_memory,
                       '--trace_memory is drawn in the Chrome trace; it does not apply with '
                       '--use_chrome_trace_format=false')
        errors.require_choice(self, 'summary_verbosity', SUMMARY_VERBOSITIES)

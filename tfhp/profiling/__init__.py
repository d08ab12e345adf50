"""Profiling: trace one `session.run`, read the trace back by stage, report the bottleneck.

Owns: capturing a step with FULL_TRACE and writing it as a Chrome trace (`capture`), reading a
step's RunMetadata into timed ops and cross-device transfers (`events`), the figures computed
from them (`analysis`: busy/idle per device, time per stage, critical path, overlap) and their
text form (`report`), stepping through a pipelined graph's warm-up (`stepping`), TensorBoard
summaries (`summaries`), the bottleneck verdict of `python -m tfhp.diagnose` (`bottleneck`),
writing the graph and the per-device graphs the runtime ran (`graphs`) and tfprof profiles of
steps (`tfprof`); time intervals and their overlap (`intervals`), what the links take at least
and the cluster verdict over repeats (`link_bound`), the oneDNN kernels of a run from its
verbose log (`onednn_log`), a traced step's compute and all-reduce by row (`timeline`), a
traced ps step's compute, pushes, applies and pulls by row (`push_pull`), every worker's
pull, compute and push on one clock (`worker_phases`), and the figure of the diagnose report:
self time per stage and device, step time per run (`stage_figure`).

Stages are recognised from the name scopes of `tfhp.ops.scopes` alone, so the analyser knows
nothing about any particular pipeline, model or variable manager.
"""

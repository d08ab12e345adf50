"""Tracing a between-graph worker's step (--trace_file, --partitioned_graph_file_prefix): which
worker writes which file (`task_path`), and the traced step with the background runs beside it
merged into its trace (`step_tracing`)."""
import time

from tfhp.ops import session_hooks
from tfhp.profiling import capture
from tfhp.profiling import graphs as graphs_lib

# In --trace_file: every worker writes its own trace, its task index here.
TRACE_TASK = '{task}'


def task_path(path, index):
    """The path this worker writes an output of --trace_file, --graph_file or
    --partitioned_graph_file_prefix to: the chief (task 0) writes it, and with `{task}` in it
    every worker writes its own, the task index in place of `{task}`; None: not this worker."""
    if path and (index == 0 or TRACE_TASK in path):
        return path.replace(TRACE_TASK, str(index))
    return None


def step_tracing(cfg, log, hooks, sess):
    """run_steps' trace_step and on_trace for --trace_file and --partitioned_graph_file_prefix:
    every worker runs timed step --trace_step traced (an extra, untimed step, so that the
    workers of a synchronous job still take their steps together), and `task_path` says who
    writes the trace files and the step's partition graphs (the traced run returns both;
    `tfhp.profiling.worker_phases` lines up the workers' traces)."""
    profile = cfg.profile
    if not (profile.trace_file or profile.partitioned_graph_file_prefix):
        return {}
    write = None
    index = cfg.cluster.task_index
    trace_file = task_path(profile.trace_file, index)
    if trace_file:
        write = capture.trace_writer(trace_file, profile.trace_memory, log,
                                     chrome=profile.use_chrome_trace_format)
    prefix = task_path(profile.partitioned_graph_file_prefix, index)
    # Background runs (background pulls, the sync chief's updates, priority pushes) are traced
    # from one extra step before the traced one, and those that overlap it, or the work
    # beside it that the step leaves (`settle`: its last pulls; with priority pushes, the
    # pushes and applies too), are merged into its trace. Every worker of a synchronous job
    # has the sync hook, so all of them run that step: their steps still pair up.
    loops = [h for h in hooks if isinstance(h, session_hooks.RunInLoops)]

    def on_trace(step, run_metadata):
        session_hooks.settle(sess, loops)
        settled_micros = time.time() * 1e6
        # Runs still in flight get as long again as the step took: a step's last pulls end
        # soon after it, while the chief's next update waits for the next step.
        wait_s = capture.duration_s(run_metadata)
        background = [trace for hook in loops for trace in hook.loop_traces(wait_s)]
        if write:
            write(step, capture.with_background(run_metadata, background, settled_micros))
        if prefix:
            for path in graphs_lib.write_partition_graphs(run_metadata, prefix):
                log('Wrote partitioned graph %s' % path)

    return {'trace_step': profile.trace_step, 'on_trace': on_trace,
            'before_trace': (lambda: [h.trace_loops() for h in loops]) if loops else None}

"""Stepping through a pipelined step: each warm-up prefix, then one full step, each traced.

A software-pipelined input is warmed up by prefixes (`tfhp.pipelines.base`): `warmup_ops[:1]`
fills the first staging area, `warmup_ops[:2]` moves that batch on and fills the first again,
and so on; then one `session.run` of the train op runs every stage at once, each on a
different step's data. `step_through` does exactly what `tfhp.session.warm_up` and one step do,
but traces each `session.run`, so one can see (and analyse) what each of them ran, and reads
the staging areas' sizes after each, so one can see them fill.
"""
import collections
import os

from tfhp import session as session_lib
from tfhp.profiling import capture

TracedRun = collections.namedtuple('TracedRun', [
    'label',         # 'warmup_1', ..., 'warmup_<k>', then 'step'
    'fetches',       # what was run
    'run_metadata',
    'trace_path',    # the Chrome trace written, or None
    'sizes',         # {staging area name: sets it holds after this run}; {} if none given
])


def step_through(sess, warmup_ops, train_op, trace_dir=None, show_memory=False, sizes=None):
    """Runs the warm-up prefixes and one full step, tracing each `session.run`.

    Call it on a freshly initialised session in place of `session.warm_up` and the first step;
    the session is left in the same state.

    Args:
      sess: a session whose variables are initialised and whose staging areas are empty.
      warmup_ops: the step's ordered warm-up ops (`StepOps.warmup_ops`).
      train_op: the full step (`StepOps.train_op`).
      trace_dir: if set, `<label>.json` (and its RunMetadata) is written here for each run.
      show_memory: include tensor memory in the Chrome traces.
      sizes: {area name: size tensor} of the staging areas to read after each run (e.g.
        `tfhp.pipelines.software_pipeline.sizes_by_name(chain)`, or each
        `tfhp.ops.staging.Staged`'s name and size); read untraced, in a run of their own.
    Returns:
      A list of `TracedRun`, in the order run.
    """
    sizes = dict(sizes or {})
    plan = [('warmup_%d' % (k + 1), list(warmup_ops[:k + 1])) for k in range(len(warmup_ops))]
    plan.append(('step', train_op))
    runs = []
    for label, fetches in plan:
        _, metadata = session_lib.run_traced(sess, fetches)
        path = None
        if trace_dir:
            path = capture.write_trace(metadata, os.path.join(trace_dir, label + '.json'),
                                       show_memory)[0]
        after = dict(zip(sizes, (int(n) for n in sess.run(list(sizes.values())))))
        runs.append(TracedRun(label, fetches, metadata, path, after))
    return runs

"""Each worker's pull, compute and push in one traced step of a parameter-server job, on one clock.

With `{task}` in `--trace_file`, every worker of a between-graph job traces the same step and
writes its own trace (`tfhp.cluster.worker`). Step stats time ops in nanoseconds since the epoch,
and the tasks of a one-machine job share one clock, so the workers' traces line up. Each phase
is read from the transfers and stages that one worker's trace holds:
  pull     the worker's reads of the model's variables: RecvTensor on the worker of a tensor a
           ReadVariableOp under no stage scope made on a ps (not the global step's reads, which
           are in the manager's `aggregate` scope);
  compute  the worker's forward and backward ops (with emulated compute, its waits);
  push     the ps's RecvTensor of the worker's gradients: tensors of its `backward` stage.
A phase is [its first op's start, its last op's end]; the compute ops' own intervals are kept
too (`busy`), since with emulated compute the first layers' waits start before the last
weights arrive. How far apart the pulls end says how fairly the ps's NIC served its workers
(`tfhp.launcher.links`).
"""
import collections
import re

from tfhp.ops import scopes
from tfhp.profiling import events
from tfhp.profiling import intervals

PHASES = ('pull', 'compute', 'push')
# (first start, last end) of each phase, in ms from the earliest start of any worker's phase;
# None for a phase the trace does not hold. busy: the compute ops' intervals, merged.
Phases = collections.namedtuple('Phases', ('task',) + PHASES + ('busy',))

# A RecvTensor's timeline label: '[6.1MB] [247Mb/s] edge_24_<tensor> from <device> to <device>'.
_TRANSFER = re.compile(r'edge_\d+_(\S+) from /job:(\w+)/\S+ to /job:(\w+)/')


def _phase(node_stats, device):
    """The phase an op of a worker's trace belongs to, or None."""
    if node_stats.node_name == 'RecvTensor':
        match = _TRANSFER.search(node_stats.timeline_label)
        if not match:
            return None
        tensor, src, dst = match.groups()
        if (src, dst) == ('ps', 'worker') and tensor.endswith('ReadVariableOp'):
            return 'pull' if events.stage_of(tensor, '') == events.OTHER else None
        if (src, dst) == ('worker', 'ps'):
            return 'push' if events.stage_of(tensor, '') == scopes.BACKWARD else None
        return None
    if '/job:worker/' in device and events.stage_of(node_stats.node_name, '') in (
            scopes.FORWARD, scopes.BACKWARD):
        return 'compute'
    return None


def read(run_metadata):
    """{phase: [(start, end) in ns since the epoch of each of its ops]} of one worker's traced
    step."""
    spans = collections.defaultdict(list)
    for dev_stats in run_metadata.step_stats.dev_stats:
        for node_stats in dev_stats.node_stats:
            phase = _phase(node_stats, dev_stats.device)
            if phase:
                spans[phase].append(events._nanos(node_stats))  # pylint: disable=protected-access
    return dict(spans)



def align(spans_by_task):
    """[Phases] of every task, in ms from the earliest start of any task's phase, ordered by
    when the pulls end.

    Args:
      spans_by_task: {task name: `read`'s spans}.
    """
    origin = min(s for spans in spans_by_task.values() for ops in spans.values() for s, _ in ops)
    ms = lambda interval: tuple((t - origin) / 1e6 for t in interval)  # noqa: E731
    rows = []
    for task, spans in spans_by_task.items():
        whole = [ms((min(s for s, _ in spans[phase]), max(e for _, e in spans[phase])))
                 if phase in spans else None for phase in PHASES]
        busy = [ms(i) for i in intervals.union(spans.get('compute', ()))]
        rows.append(Phases(task, *whole, busy=busy))
    return sorted(rows, key=lambda r: (r.pull or (float('inf'),))[-1])


def pull_spread_ms(rows):
    """How far apart the workers' pulls end (ms): 0 when the ps served them all at once."""
    ends = [r.pull[1] for r in rows if r.pull]
    return max(ends) - min(ends) if ends else None

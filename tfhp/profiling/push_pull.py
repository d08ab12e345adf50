"""One traced parameter-server step as a timeline: one worker's compute, its pushes and pulls,
and the chief's applies, row by row. Pure Python over a `RunMetadata`.

The step's trace holds the worker's forward and backward ops and the ps's receipt of its
gradients; the pulls of background pulls and the chief's applies run in threads of their own,
whose traced runs `capture.with_background` merges in as lanes `<device> [<loop op>]`. Rows
(`ROWS`):
  forward, backward: the worker's ops under those stages (`events.stage_of`);
  push: each gradient (or chunk) of at least MIN_BYTES received by a ps task from the worker
    (with one ps task, the one link the row stands for);
  apply: the chief's optimizer ops (`ResourceApply*` under the apply stage) on the ps tasks;
  pull: each variable (or chunk) of at least MIN_BYTES received by the worker from a ps task.
Smaller transfers (tokens, control edges, biases) are left out. A receive is traced from its
request to its data's arrival, and one link carries one transfer's bytes at a time, so each
push or pull is drawn from the later of its request and the previous one's arrival: its time on
the wire. Times are ms since the step's own first op, so background runs may start before 0.
"""
import re

from tfhp.ops import scopes
from tfhp.profiling import events

FORWARD = 'forward'
BACKWARD = 'backward'
PUSH = 'push (worker -> ps)'
APPLY = 'apply (chief)'
PULL = 'pull (ps -> worker)'
ROWS = (FORWARD, BACKWARD, PUSH, APPLY, PULL)
MIN_BYTES = 64 * 1024

# An RPC receive's label: '[0.5MB] [788.6Mb/s] edge_340_Identity_16 from <device> to <device>'.
_RECEIVE = re.compile(r'^\[([\d.]+)(B|KB|MB|GB)\].* from (\S+) to (\S+)')
_UNITS = {'B': 1, 'KB': 1 << 10, 'MB': 1 << 20, 'GB': 1 << 30}


def _task(device):
    """'/job:worker/replica:0/task:1/device:CPU:0 [loop]' -> ('worker', 1)."""
    match = re.search(r'/job:(\w+)/replica:\d+/task:(\d+)', device)
    return (match.group(1), int(match.group(2))) if match else (None, None)


def received(label):
    """(bytes, source task, destination task) of an RPC receive's label, or None."""
    match = _RECEIVE.match(label)
    if not match:
        return None
    size, unit, source, destination = match.groups()
    return int(float(size) * _UNITS[unit]), _task(source), _task(destination)


def row_of(device, node_name, label, worker):
    """The row of one traced op (None: left out), for worker task `worker`."""
    job, task = _task(device)
    if node_name == 'RecvTensor':
        transfer = received(label)
        if not transfer or transfer[0] < MIN_BYTES:
            return None
        _, source, destination = transfer
        if source == ('worker', worker) and destination[0] == 'ps':
            return PUSH
        if source[0] == 'ps' and destination == ('worker', worker):
            return PULL
        return None
    stage = events.stage_of(node_name, '')
    if (job, task) == ('worker', worker) and stage in (FORWARD, BACKWARD):
        return stage
    if job == 'ps' and stage == scopes.APPLY and 'ResourceApply' in node_name:
        return APPLY
    return None


def rows(run_metadata, worker=0):
    """{row: [(start_ms, end_ms), ...] in start order} for every row of ROWS."""
    step = [n for d in run_metadata.step_stats.dev_stats if ' [' not in d.device
            for n in d.node_stats]
    origin = min(n.all_start_micros for n in step)
    by_row = {row: [] for row in ROWS}
    for dev_stats in run_metadata.step_stats.dev_stats:
        for node in dev_stats.node_stats:
            row = row_of(dev_stats.device, node.node_name, node.timeline_label, worker)
            if row:
                start = (node.all_start_micros - origin) / 1e3
                by_row[row].append((start, start + node.all_end_rel_micros / 1e3))
    for row in (PUSH, PULL):
        by_row[row] = on_the_wire(by_row[row])
    return {row: sorted(spans) for row, spans in by_row.items()}


def on_the_wire(spans):
    """Receives [(request, arrival)] on one link as the spans their bytes took: in arrival
    order, each from the later of its request and the previous arrival."""
    wire, previous = [], float('-inf')
    for start, end in sorted(spans, key=lambda s: s[1]):
        wire.append((max(start, previous), end))
        previous = end
    return wire

"""One traced step as a timeline: its compute and its all-reduce, row by row, and how much of
the all-reduce ran during the backward pass. Pure Python over `events.Op`s.

Rows (`ROWS`): the forward and backward waits of an emulated model
(`tfhp.emulation.model`: ops named `forward_wait*` and `backward_wait*`, one per layer), and
the all-reduce, the bucket concatenations and collective reductions (`ConcatV2`,
`CollectiveReduceV2`, ...) under the aggregate scope. Ops in no row (variable reads, the job's
control collective, the apply) are left out. `plots.step_timelines` draws the rows; `overlap` states
what the figure shows: with fusion buckets (`--fusion_bucket_bytes`) the first all-reduce starts
while backward waits are still to come, with the single pack only after the last one.
"""
import collections

from tfhp.ops import scopes
from tfhp.profiling import intervals

FORWARD = 'forward wait'
BACKWARD = 'backward wait'
ALL_REDUCE = 'all-reduce'
ROWS = (FORWARD, BACKWARD, ALL_REDUCE)
# The aggregate stage's ops that move or fuse the gradients (not its reshapes and slices).
ALL_REDUCE_TYPES = ('CollectiveReduceV2', 'CollectiveReduce', 'ConcatV2', 'NcclAllReduce')


Overlap = collections.namedtuple('Overlap', [
    'step_ms',             # the step: first op's start to last op's end (all ops)
    'backward_end_ms',     # the last backward wait's end
    'first_all_reduce_ms',  # the first all-reduce op's start
    'all_reduce_ms',       # time some all-reduce op ran (overlaps counted once)
    'overlapped_ms',       # of that, time during a backward wait
])


def row_of(op):
    """The row of an `events.Op` (one of ROWS), or None for an op the timeline leaves out."""
    leaf = op.name.rpartition('/')[2]
    if leaf.startswith('forward_wait'):
        return FORWARD
    if leaf.startswith('backward_wait'):
        return BACKWARD
    if op.type in ALL_REDUCE_TYPES and op.stage == scopes.AGGREGATE:
        return ALL_REDUCE
    return None


def rows(ops):
    """{row: [(start_ms, end_ms), ...] in start order} for every row of ROWS (empty: no op).

    Times are the ops' own (`events.parse`: microseconds since the step's first op), in ms.
    """
    by_row = {row: [] for row in ROWS}
    for op in sorted(ops, key=lambda o: o.start):
        row = row_of(op)
        if row:
            by_row[row].append((op.start / 1e3, op.end / 1e3))
    return by_row


def overlap(ops):
    """The step's `Overlap` (None fields where a row has no op)."""
    by_row = rows(ops)
    backward, all_reduce = by_row[BACKWARD], by_row[ALL_REDUCE]
    step = (max(o.end for o in ops) - min(o.start for o in ops)) / 1e3 if ops else 0.0
    return Overlap(
        step_ms=step,
        backward_end_ms=max(end for _, end in backward) if backward else None,
        first_all_reduce_ms=min(start for start, _ in all_reduce) if all_reduce else None,
        all_reduce_ms=intervals.length(all_reduce),
        overlapped_ms=intervals.overlap(all_reduce, backward))

"""Time intervals (start, end) in microseconds: unions, overlaps and fair shares. Pure Python."""


def union(intervals):
    """The disjoint, sorted union of `intervals` (empty ones are dropped)."""
    merged = []
    for start, end in sorted(i for i in intervals if i[1] > i[0]):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [tuple(i) for i in merged]


def length(intervals):
    """Total time covered by `intervals` (overlaps counted once)."""
    return sum(end - start for start, end in union(intervals))


def overlap(a, b):
    """Time covered by both `a` and `b` (each any list of intervals)."""
    a, b = union(a), union(b)
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        total += max(0.0, min(a[i][1], b[j][1]) - max(a[i][0], b[j][0]))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def fair_shares(intervals):
    """Splits the covered time among the intervals that cover it.

    Each instant covered by k intervals gives 1/k of itself to each, so the shares add up to
    `length(intervals)` exactly: a device's busy time is divided among the ops that ran
    concurrently on it instead of being counted once per thread.

    Args:
      intervals: a list of (start, end).
    Returns:
      A list of shares, one per interval, in the same order.
    """
    points = sorted({p for interval in intervals for p in interval})
    starts = sorted(range(len(intervals)), key=lambda k: intervals[k][0])
    shares = [0.0] * len(intervals)
    active, next_start = set(), 0
    for left, right in zip(points, points[1:]):
        while next_start < len(starts) and intervals[starts[next_start]][0] <= left:
            active.add(starts[next_start])
            next_start += 1
        active = {k for k in active if intervals[k][1] > left}
        if active:
            piece = (right - left) / len(active)
            for k in active:
                shares[k] += piece
    return shares

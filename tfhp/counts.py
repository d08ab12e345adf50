"""The counts a run reports (dropped gradients, gradient staleness) and their arithmetic.

Managers keep them in graph counters (`VariableManager.counters`, `tfhp.replication.staleness`);
results carry their values. Pure Python: the launcher sums the workers' without TensorFlow.
"""


def values(fetched):
    """{name: int, or list of ints for a vector} of fetched `counters()` values."""
    return {name: [int(x) for x in value] if getattr(value, 'ndim', 0) else int(value)
            for name, value in fetched.items()}


# Counter names, as they appear in results.
COUNT, SUM, MAX, DROPPED, HISTOGRAM = ('staleness_count', 'staleness_sum', 'staleness_max',
                                       'stale_gradients_dropped', 'staleness_histogram')
# Histogram bins: staleness 0, 1, ..., BINS - 2, and BINS - 1 or more.
BINS = 17


def difference(after, before):
    """The counts of the updates between two readings of a manager's counters (e.g. the timed
    steps after the warm-up).

    Every count is subtracted (a vector element by element), but the max: it comes from the
    histogram's highest non-empty bin when that is below the last, open bin, else it is the later
    reading's (which may then include updates before `before`).
    """
    result = {}
    for name, value in after.items():
        if name == MAX:
            result[name] = value
        elif isinstance(value, list):
            result[name] = [a - b for a, b in zip(value, before[name])]
        else:
            result[name] = value - before[name]
    if HISTOGRAM in result:
        filled = [i for i, n in enumerate(result[HISTOGRAM]) if n]
        if not filled:
            result[MAX] = 0
        elif filled[-1] < BINS - 1:
            result[MAX] = filled[-1]
    return result


def summary(readings):
    """Result figures from the counters of one or several replicas' graphs.

    Args:
      readings: a dict of counter values, or a list of them (e.g. one per worker).
    Returns:
      {'staleness_mean', 'staleness_max', 'staleness_count', 'stale_gradients_dropped',
      'staleness_histogram'}, or {} when no count is there (staleness was not measured).
    """
    counts = [c for c in ([readings] if isinstance(readings, dict) else readings)
              if COUNT in c]
    if not counts:
        return {}
    total = sum(c[COUNT] for c in counts)
    return {'staleness_mean': sum(c[SUM] for c in counts) / total if total else 0.0,
            'staleness_max': max(c[MAX] for c in counts), 'staleness_count': total,
            'stale_gradients_dropped': sum(c.get(DROPPED, 0) for c in counts),
            HISTOGRAM: [sum(bins) for bins in zip(*(c[HISTOGRAM] for c in counts))]}

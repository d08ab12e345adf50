"""Repeated measurements: their summary, which differences between rows are real, table cells.

Every study measures each row --repeats times (repeat r with tf_random_seed + r) and reports each
figure as a summary, `summarise(values)`:

  {'median': m, 'min': lo, 'max': hi, 'n': number of repeats, 'values': [each repeat's value]}

Spread: the full range, min to max, whatever n. The studies afford 3 to 10 repeats, where an
interval estimated from the data (a bootstrap interval of the median, say) is no better than the
range it is drawn from (with 3 values it can only be those values), while the range is exact,
needs no assumptions, and the reader can check it against `values`. It widens with n, which only
makes the mark below rarer.

Not reached: a figure "to the target" that a repeat did not reach within its budget is None.
None ranks above every number (as infinity would, but JSON has none): it can be the max, or the
median when at least half the repeats did not reach; such a median or max is None, printed
'n/r'.

The mark (`compare`): two summaries differ when their ranges do not overlap (every repeat of one
is below every repeat of the other) and that is unlikely by chance. If the rows did not differ,
all n + m values would be exchangeable and a complete separation, either way round, would
happen with probability 2 / C(n + m, n) (`separation_p`): 0.10 for 3 repeats against 3, 0.029
for 4 against 4, 0.008 for 5 against 5, 1.0 for 1 against 1. A mark needs both: no overlap and
that probability at most ALPHA = 0.1, so one or two repeats never mark anything. At the default
3 repeats a mark is evidence at the 10% level; --repeats=5 makes it 1%.
"""
import math
import statistics

ALPHA = 0.1
NOT_REACHED = 'n/r'
_INF = float('inf')


def _key(value):
    return _INF if value is None else value


def _finite(value):
    return None if value == _INF else value


def summarise(values):
    """The summary of one figure's repeats (None: not reached, above every number).

    Args:
      values: each repeat's value, a number or None.
    Returns:
      {'median', 'min', 'max', 'n', 'values'}; median, min and max are None where they fall on
      a not-reached repeat.
    Raises:
      ValueError: no values.
    """
    values = list(values)
    if not values:
        raise ValueError('a summary of no repeats')
    ordered = sorted((_key(v) for v in values))
    median = statistics.median(ordered)
    return {'median': _finite(median), 'min': _finite(ordered[0]),
            'max': _finite(ordered[-1]), 'n': len(values), 'values': values}


def scaled(summary, factor):
    """The summary of every value times factor (factor > 0; e.g. bytes/sec -> GB/s)."""
    return summarise([None if v is None else v * factor for v in summary['values']])


def is_summary(value):
    """Whether value is a `summarise` result."""
    return isinstance(value, dict) and 'median' in value and 'values' in value


def separation_p(n, m):
    """Chance that n and m exchangeable values fall apart completely, either way round."""
    return min(1.0, 2.0 / math.comb(n + m, n))


def compare(a, b):
    """+1 if a is really above b, -1 if really below, 0 within noise (module docstring).

    Args:
      a, b: summaries.
    """
    if separation_p(a['n'], b['n']) > ALPHA:
        return 0
    if _key(a['max']) < _key(b['min']):
        return -1
    if _key(b['max']) < _key(a['min']):
        return 1
    return 0


def _number(value, fmt, scale=1):
    return NOT_REACHED if value is None else fmt % (value * scale)


def cell(summary, fmt='%g', mark=False, scale=1):
    """'median [min-max]' of a summary ('median' alone for one repeat), '*' appended if mark.

    Args:
      summary: a summary.
      fmt: %-format of each number.
      mark: append ' *' (the row differs from the reference row).
      scale: print each number times this (e.g. 1e-9 for GB/s of bytes/sec).
    """
    median, low, high = (_number(summary[k], fmt, scale) for k in ('median', 'min', 'max'))
    if summary['median'] is None and summary['min'] is None:
        text = NOT_REACHED
    elif summary['n'] == 1:
        text = median
    else:
        text = '%s [%s\u2013%s]' % (median, low, high)
    return text + (' *' if mark else '')


def combine(runs, figures, seeds=None):
    """One record from each repeat's record.

    Args:
      runs: the repeats' records (dicts), in repeat order.
      figures: the keys to summarise, over the runs that have the key (a run without it, e.g.
        one that failed, is not counted; None is a value: not reached); a key no run has is
        left out.
      seeds: each repeat's seed, if the study has one.
    Returns:
      What every run shares (keys whose values are equal in all runs), a summary per figure,
      'repeats', 'seeds' and 'runs' (each repeat's whole record).
    """
    record = {k: v for k, v in runs[0].items()
              if k not in figures and all(r.get(k, None) == v for r in runs)}
    for key in figures:
        if any(key in r for r in runs):
            record[key] = summarise([r[key] for r in runs if key in r])
    record.update(repeats=len(runs), runs=list(runs))
    if seeds is not None:
        record['seeds'] = list(seeds)
    return record


def mark(records, reference, figures):
    """Adds 'vs_reference' to every record: {figure: 'lower', 'higher' or 'within noise'}.

    Args:
      records: combined records (the reference among them gets none).
      reference: the record the others are compared with; its label goes in 'reference'.
      figures: summarised keys to compare.
    """
    words = {-1: 'lower', 0: 'within noise', 1: 'higher'}
    for record in records:
        if record is reference:
            continue
        record['vs_reference'] = {k: words[compare(record[k], reference[k])] for k in figures
                                  if is_summary(record.get(k)) and is_summary(reference.get(k))}
    return records


def differences(name, summaries, fmt='%g', below='is below'):
    """Sentences on which labelled summaries really differ (every pair), for a conclusion.

    Args:
      name: the figure, e.g. 'images to target'.
      summaries: [(label, summary)].
      fmt: %-format of the medians.
      below: how a lower value reads, e.g. 'needs fewer images than'.
    Returns:
      Lines: the labels by median, the pairs that differ, the pairs within noise.
    """
    ordered = sorted(summaries, key=lambda item: (_key(item[1]['median']), item[0]))
    lines = ['%s, by median: %s' % (name, ', '.join(
        '%s %s' % (label, _number(s['median'], fmt)) for label, s in ordered))]
    real, noise = [], []
    for i, (label_a, a) in enumerate(ordered):
        for label_b, b in ordered[i + 1:]:
            if compare(a, b) < 0:
                real.append('%s %s %s' % (label_a, below, label_b))
            else:
                noise.append('%s vs %s' % (label_a, label_b))
    if real:
        lines.append('  real (ranges apart): ' + '; '.join(real))
    if noise:
        lines.append('  within noise (ranges overlap, or too few repeats): ' + '; '.join(noise))
    return lines

"""The figures of two runs of the studies side by side: `experiments/smallest.sh` at two commits.

Each DIR holds <study>.jsonl files (the studies' JSON lines). Within a study, a record of the
old run is matched with the new run's record that has the same settings (its text and true/false
fields: model, mode, label, ...; the n-th such record with the n-th); its figures are its numbers
and the medians of its summaries (`experiments.stats`). For each study this prints the records
of each run, those matched, and how many figures are identical, within --tolerance (a relative
difference), or beyond it, naming the latter; then one JSON line per study.

  python -m experiments.compare_runs OLD_DIR NEW_DIR [--tolerance=0.25]

A run's provenance (caption, commit, date, machine) is not a figure. Figures are compared as
they are: at the smallest settings a timing is one repeat of a few steps, and only a figure
that does not depend on time (an accuracy under a seed, bytes, a count, a prediction) is
expected to be identical.
"""
import collections
import json
import os
import sys

from absl import app
from absl import flags

FLAGS = flags.FLAGS
PROVENANCE = frozenset(['caption', 'commit', 'date', 'machine', 'host', 'command'])


def load(path):
    """The JSON records of a file of JSON lines (other lines skipped); [] if it is missing."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.lstrip().startswith('{')]


def settings(record):
    """What identifies a record within its study: its text and true/false fields."""
    return tuple(sorted((k, v) for k, v in record.items()
                        if isinstance(v, (str, bool)) and k not in PROVENANCE))


def figures(record):
    """{name: number} of a record: its numbers, and its summaries' medians."""
    out = {}
    for key, value in record.items():
        if key in PROVENANCE or isinstance(value, bool):
            continue
        if isinstance(value, dict) and isinstance(value.get('median'), (int, float)):
            out[key] = value['median']
        elif isinstance(value, (int, float)):
            out[key] = value
    return out


def compare(old, new, tolerance):
    """The comparison of one study's records (lists of dicts): counts, and the figures beyond
    `tolerance` as (settings, name, old, new)."""
    by_settings = collections.defaultdict(list)
    for record in new:
        by_settings[settings(record)].append(record)
    seen = collections.Counter()
    result = {'old': len(old), 'new': len(new), 'matched': 0, 'identical': 0, 'within': 0,
              'beyond': []}
    for record in old:
        key = settings(record)
        candidates = by_settings.get(key, [])
        if seen[key] >= len(candidates):
            continue
        other = candidates[seen[key]]
        seen[key] += 1
        result['matched'] += 1
        a, b = figures(record), figures(other)
        for name in sorted(set(a) & set(b)):
            if a[name] == b[name]:
                result['identical'] += 1
            elif a[name] and abs(b[name] - a[name]) <= tolerance * abs(a[name]):
                result['within'] += 1
            else:
                result['beyond'].append((dict(key), name, a[name], b[name]))
    return result


def _label(record_settings):
    return ', '.join('%s=%s' % kv for kv in sorted(record_settings.items())
                     if kv[0] in ('label', 'mode', 'model', 'setting', 'scheme', 'name',
                                  'variable_update', 'series'))


def main(argv):
    if len(argv) != 3:
        print('usage: python -m experiments.compare_runs OLD_DIR NEW_DIR', file=sys.stderr)
        return 2
    old_dir, new_dir = argv[1:]
    for directory in (old_dir, new_dir):
        if not os.path.isdir(directory):
            print('compare_runs: %s is not a directory' % directory, file=sys.stderr)
            return 2
    studies = sorted({f[:-len('.jsonl')] for d in (old_dir, new_dir) for f in os.listdir(d)
                      if f.endswith('.jsonl')})
    for study in studies:
        r = compare(load(os.path.join(old_dir, study + '.jsonl')),
                    load(os.path.join(new_dir, study + '.jsonl')), FLAGS.tolerance)
        print('%-22s records %d -> %d, matched %d; figures identical %d, within %.0f%% %d, '
              'beyond %d' % (study, r['old'], r['new'], r['matched'], r['identical'],
                             100 * FLAGS.tolerance, r['within'], len(r['beyond'])))
        for record_settings, name, a, b in r['beyond']:
            print('    %s %s: %.4g -> %.4g' % (_label(record_settings), name, a, b))
        print(json.dumps({'study': study, 'old': r['old'], 'new': r['new'],
                          'matched': r['matched'], 'identical': r['identical'],
                          'within': r['within'], 'beyond': len(r['beyond'])}))
    return 0


if __name__ == '__main__':
    flags.DEFINE_float('tolerance', 0.25, 'A figure within this relative difference of the old '
                       'one is "within"; beyond it, it is named.')
    app.run(main)

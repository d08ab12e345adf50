"""Which oneDNN kernels a run executed, and how long each took: read from ONEDNN_VERBOSE logs.

TensorFlow's CPU build runs its convolutions, matmuls, batch norms and pooling through oneDNN.
A traced step (`--trace_file`) names the TensorFlow op (`_MklNativeConv2DBackpropFilter`) but
not the oneDNN implementation oneDNN chose for it (`brg_conv_bwd:avx512_core`, `jit_1x1:...`)
nor the layout reorders it inserted. With `ONEDNN_VERBOSE=1` in its environment, a process
prints one line per primitive execution; this module reads those lines back:

  onednn_verbose,v1,primitive,exec,cpu,convolution,brgconv_1x1:avx512_core,forward_training,
      <memory descriptors>,<attributes>,<auxiliary>,mb8_ic64oc256_ih56oh56kh1sh1..._iw56...,0.41

`summarize` groups executions by primitive kind, implementation and propagation kind;
`compare` sets two runs side by side (tfhp and the reference benchmark, say) problem by
problem: the same problems run by the same implementations at the same median times is what
"the same kernels" means, and whatever else differs between the two runs lies outside them.
"""
import collections
import statistics

# The field that marks a primitive execution (after it: the engine, then the primitive kind,
# its implementation and its propagation kind).
_EXEC = 'exec'

Execution = collections.namedtuple('Execution', ['kind', 'impl', 'prop', 'problem', 'ms'])
Group = collections.namedtuple('Group', ['kind', 'impl', 'prop', 'count', 'total_ms',
                                         'problems'])
# One group of a comparison: over the problems both runs executed (`common`), the sum of each
# problem's median time per execution in either run; the problems only one of them ran.
Compared = collections.namedtuple('Compared', ['kind', 'impl', 'prop', 'common', 'ms_a',
                                               'ms_b', 'only_a', 'only_b'])


def parse(lines):
    """The primitive executions in `lines` (a log's lines; other lines are skipped).

    Reads oneDNN 3.x lines (`onednn_verbose,v1,primitive,exec,cpu,...`) and the older form
    without the `v1,primitive` fields alike: the kind, implementation and propagation kind are
    the three fields after the engine, the time in ms the last one, and the problem the
    fields between (memory formats, attributes, shapes).

    Raises:
      ValueError: an execution line whose time is not a number (a truncated log), with its
        line number.
    """
    executions = []
    for number, line in enumerate(lines, 1):
        if not line.startswith('onednn_verbose,') and not line.startswith('dnnl_verbose,'):
            continue
        fields = line.rstrip('\n').split(',')
        # oneDNN 3.x: `v1,primitive,exec` (`v1,graph,exec` lines are laid out otherwise);
        # 2.x: `exec` right after the prefix.
        at = 3 if fields[1:3] == ['v1', 'primitive'] else 1
        if len(fields) < at + 7 or fields[at] != _EXEC:
            continue
        try:
            ms = float(fields[-1])
        except ValueError:
            raise ValueError('line %d: an execution without a time (truncated log?): %r'
                             % (number, line.strip()[:120])) from None
        # The problem is everything between the propagation kind and the time: memory
        # formats, attributes (fused post-ops) and shapes, so equal problems are equal work.
        executions.append(Execution(fields[at + 2], fields[at + 3], fields[at + 4],
                                    ','.join(fields[at + 5:-1]), ms))
    return executions


def read(path):
    """`parse` of the file at `path`.

    Raises:
      OSError: the file cannot be read.
      ValueError: as `parse`, naming the file; or the file holds no execution at all (the run
        was not started with ONEDNN_VERBOSE=1).
    """
    with open(path, encoding='utf-8', errors='replace') as f:
        try:
            executions = parse(f)
        except ValueError as e:
            raise ValueError('%s: %s' % (path, e)) from None
    if not executions:
        raise ValueError('%s: no oneDNN primitive executions (run the program with '
                         'ONEDNN_VERBOSE=1 and keep its standard output)' % path)
    return executions


def _key(execution):
    return execution.kind, execution.impl, execution.prop


def summarize(executions):
    """One `Group` per (kind, implementation, propagation kind), the costliest first."""
    count, total, problems = collections.Counter(), collections.Counter(), {}
    for e in executions:
        count[_key(e)] += 1
        total[_key(e)] += e.ms
        problems.setdefault(_key(e), set()).add(e.problem)
    return sorted((Group(*key, count[key], total[key], len(problems[key])) for key in count),
                  key=lambda g: -g.total_ms)


def _medians(executions):
    """{(kind, impl, prop): {problem: median ms per execution}}."""
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    for e in executions:
        times[_key(e)][e.problem].append(e.ms)
    return {key: {p: statistics.median(ms) for p, ms in by_problem.items()}
            for key, by_problem in times.items()}


def compare(a, b):
    """`Compared` groups of two runs' executions, the costliest (in either run) first.

    Medians make the comparison independent of how many steps each run took and of its first,
    cold executions; a problem is counted once whatever the number of times a step runs it.
    """
    med_a, med_b = _medians(a), _medians(b)
    rows = []
    for key in set(med_a) | set(med_b):
        pa, pb = med_a.get(key, {}), med_b.get(key, {})
        common = set(pa) & set(pb)
        rows.append(Compared(*key, len(common), sum(pa[p] for p in common),
                             sum(pb[p] for p in common), len(set(pa) - common),
                             len(set(pb) - common)))
    return sorted(rows, key=lambda r: -max(r.ms_a, r.ms_b))


def total(rows):
    """`compare`'s rows summed into one `Compared` row, of kind 'all'."""
    return Compared('all', '', '', *(sum(getattr(r, field) for r in rows)
                                     for field in Compared._fields[3:]))


def common_ratio(rows):
    """Sum of a's median times over the problems both ran, divided by b's (None: none)."""
    summed = total(rows)
    return summed.ms_a / summed.ms_b if summed.ms_b else None


def _impl_width(rows):
    return max([len('implementation')] + [len(r.impl) for r in rows])


def format_summary(groups):
    """The table of `summarize`'s groups, with each one's share of the primitive time."""
    total = sum(g.total_ms for g in groups) or 1.0
    w = _impl_width(groups)
    lines = ['%-20s %-*s %-18s %6s %8s %10s %6s' % (
        'primitive', w, 'implementation', 'propagation', 'execs', 'problems', 'total ms',
        'share')]
    lines += ['%-20s %-*s %-18s %6d %8d %10.1f %5.1f%%' % (
        g.kind, w, g.impl, g.prop, g.count, g.problems, g.total_ms, 100.0 * g.total_ms / total)
        for g in groups]
    lines.append('%-*s %6d %8s %10.1f' % (40 + w, 'all', sum(g.count for g in groups), '',
                                          sum(g.total_ms for g in groups)))
    return '\n'.join(lines)


def format_comparison(rows, name_a='a', name_b='b'):
    """The table of `compare`'s rows and the ratio over the problems both ran."""
    w = _impl_width(rows)
    lines = ['%-20s %-*s %-18s %7s %12s %12s %7s %7s %7s' % (
        'primitive', w, 'implementation', 'propagation', 'common', name_a + ' ms',
        name_b + ' ms', 'ratio', 'only a', 'only b')]
    for r in rows:
        ratio = '%7.3f' % (r.ms_a / r.ms_b) if r.ms_b else '%7s' % '-'
        lines.append('%-20s %-*s %-18s %7d %12.2f %12.2f %s %7d %7d' % (
            r.kind, w, r.impl, r.prop, r.common, r.ms_a, r.ms_b, ratio, r.only_a, r.only_b))
    summed, ratio = total(rows), common_ratio(rows)
    lines.append('a = %s, b = %s; sum of median times over the problems both ran: %.2f ms '
                 'against %.2f ms, ratio %s' % (
                     name_a, name_b, summed.ms_a, summed.ms_b,
                     '%.3f' % ratio if ratio is not None else '-'))
    return '\n'.join(lines)

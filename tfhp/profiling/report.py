"""The analyser's text report (`python -m tfhp.trace`); docs/profiling.md shows one and how to read it."""
import collections

from tfhp.profiling import events

# From this share of the busy time on, the report names the ops of no stage: enough to hide a
# bottleneck from the stage table.
SIGNIFICANT_OTHER_SHARE = 0.10
OTHER_OPS_LISTED = 5
# From this share of the step (waiting for input) or of the busy time (preprocessing beside
# the towers) on, input is named: diagnose's threshold for an exposure.
SIGNIFICANT_INPUT_SHARE = 0.10

def _ms(micros):
    return micros / 1000.0


def _mb(num_bytes):
    return num_bytes / 1e6


def _device_table(analysis):
    lines = ['%-22s %9s %9s %6s %6s' % ('device', 'busy ms', 'idle ms', 'busy', 'ops')]
    for d in analysis.devices:
        lines.append('%-22s %9.3f %9.3f %5.0f%% %6d' % (
            d.device, _ms(d.busy), _ms(d.idle), 100.0 * d.busy / analysis.step_time,
            d.num_ops))
    return lines


def _stage_table(analysis):
    names = [d.device for d in analysis.devices]
    width = max([12] + [len(n) + 1 for n in names])
    lines = ['time per stage, ms (self time: each device column adds up to its busy time)',
             '%-14s' % 'stage' + ''.join('%*s' % (width, n) for n in names) + '%10s' % 'total']
    totals = analysis.stage_totals()
    for stage in analysis.stage_names:
        if totals.get(stage, 0.0) > 0:
            lines.append('%-14s' % stage + ''.join(
                '%*.3f' % (width, _ms(d.stages[stage])) for d in analysis.devices)
                + '%10.3f' % _ms(totals[stage]))
    lines.append('%-14s' % 'busy' + ''.join('%*.3f' % (width, _ms(d.busy))
                                            for d in analysis.devices)
                 + '%10.3f' % _ms(sum(d.busy for d in analysis.devices)))
    return lines


def _other_lines(analysis):
    """The share of the busy time in no stage; the largest such ops when it is significant."""
    share = analysis.other_share
    lines = ['outside every stage (other): %.1f%% of the busy time, %.3f ms' % (
        100.0 * share, _ms(analysis.stage_totals().get(events.OTHER, 0.0)))]
    if share >= SIGNIFICANT_OTHER_SHARE:
        lines.append('  these ops lie outside the stages of tfhp.ops.scopes (a hand-built graph '
                     'should build its ops under those name scopes, e.g. '
                     'tf.name_scope(scopes.FORWARD)):')
        lines += ['  %8.3f ms  %-14s %s (%s)' % (_ms(op.self_time), op.device, op.name, op.type)
                  for op in analysis.other_ops[:OTHER_OPS_LISTED]]
    return lines


def _transfer_lines(analysis):
    if not analysis.links:
        return ['transfers: none between devices']
    count = sum(c for c, _ in analysis.links.values())
    per_link = '; '.join('%s %d tensors %.3f MB' % (link, c, _mb(b))
                         for link, (c, b) in sorted(analysis.links.items()))
    lines = ['transfers: %d tensors, %.3f MB (%s)' % (count, _mb(analysis.transfer_bytes),
                                                       per_link)]
    if analysis.overlap_percent is not None:
        lines.append('  transfer time %.3f ms, %.0f%% hidden behind compute, %.3f ms exposed '
                     '(%.1f%% of the step)' % (
                         _ms(analysis.transfer_time), analysis.overlap_percent,
                         _ms(analysis.exposed_transfer_time),
                         100.0 * analysis.exposed_transfer_time / analysis.step_time))
    return lines


def _path_lines(analysis):
    path = analysis.critical_path
    if not path:
        return []
    length = sum(s.busy + s.wait for s in path)
    lines = ['critical path: %.3f ms (%.0f%% of the step), %d ops' % (
        _ms(length), 100.0 * length / analysis.step_time, sum(s.num_ops for s in path))]
    by_stage = collections.Counter()
    for s in path:
        waited = ', waited %.3f ms before' % _ms(s.wait) if s.wait >= 1.0 else ''
        lines.append('  %-14s %-14s %9.3f ms  (%d ops%s)' % (s.device, s.stage, _ms(s.busy),
                                                             s.num_ops, waited))
        by_stage[s.stage] += s.busy
        by_stage['waiting'] += s.wait
    lines.append('  by stage: ' + ', '.join('%s %.3f' % (stage, _ms(t))
                                             for stage, t in by_stage.most_common() if t > 0))
    return lines


def bound_lines(analysis):
    """What the step's input cost, and the verdict a trace supports: input when the step
    waited for it, 'cannot tell' when preprocessing shared the devices with the towers (on
    shared cores it stretches the forward and backward passes the critical path then shows),
    else compute as far as the trace shows. Only a run against synthetic data
    (`python -m tfhp.diagnose`) measures what input costs the step."""
    step = analysis.step_time
    waited = max(analysis.path_input_time, analysis.input_wait)
    lines = ['input: %.1f%% of the busy time in input and preprocessing; %.3f ms of the critical '
             'path; %.3f ms waiting in an iterator\'s GetNext (tf.data\'s own threads are not '
             'in a trace: that wait is all of its work the trace shows)' % (
                 100.0 * analysis.input_share, _ms(analysis.path_input_time),
                 _ms(analysis.input_wait))]
    if step and waited / step >= SIGNIFICANT_INPUT_SHARE:
        lines.append('Bound: input: the step waited for its input %.0f%% of its time'
                     % (100.0 * waited / step))
    elif analysis.input_share >= SIGNIFICANT_INPUT_SHARE:
        lines.append('Bound: cannot tell from a trace: preprocessing took %.0f%% of the busy '
                     'time beside the towers, and on shared cores it slows the passes the '
                     'critical path shows; python -m tfhp.diagnose times the step against '
                     'synthetic data' % (100.0 * analysis.input_share))
    else:
        lines.append('Bound: compute, as far as the trace shows (threads and processes outside '
                     'it, tf.data\'s among them, can still slow it: python -m tfhp.diagnose '
                     'times the step against synthetic data)')
    return lines


def _top_lines(analysis):
    lines = ['top ops by self time',
             '  %8s %8s  %-14s %-14s %s' % ('self ms', 'op ms', 'device', 'stage', 'op')]
    for op in analysis.top_ops:
        lines.append('  %8.3f %8.3f  %-14s %-14s %s (%s)' % (
            _ms(op.self_time), _ms(op.duration), op.device, op.stage, op.name, op.type))
    return lines


def format_report(analysis, title=None):
    """The report of a `StepAnalysis` as one string.

    Args:
      analysis: a `tfhp.profiling.analysis.StepAnalysis`.
      title: an optional first line (e.g. the trace's path).
    Returns:
      The report text.
    """
    eta = analysis.overlap_efficiency
    head = 'step %.3f ms on %d devices, imbalance %.0f%% (busiest device above the mean)' % (
        _ms(analysis.step_time), len(analysis.devices), 100.0 * analysis.imbalance)
    sections = [
        ([title] if title else []) + [head] + _device_table(analysis),
        _stage_table(analysis) + _other_lines(analysis),
        _transfer_lines(analysis) + [
            'overlap efficiency eta: %s' % ('%.2f' % eta if eta is not None
                                            else 'n/a (fewer than two busy devices)')],
        _path_lines(analysis),
        bound_lines(analysis),
        _top_lines(analysis),
    ]
    return '\n\n'.join('\n'.join(s) for s in sections if s)

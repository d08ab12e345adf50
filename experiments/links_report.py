"""Tables, marks, conclusions and plots of experiments/links_study.py, one of each per study.

REPORTS[study](records) marks each record against its study's reference (stats.mark), prints
the table and the conclusion computed from the medians; PLOTS[study](records, path, caption)
draws it (caption: machine, date and commit, `tfhp.provenance.caption`).
Records are `stats.combine`d records of `link_jobs.measure`.
"""

from experiments import common
from experiments import link_jobs
from experiments import presets
from experiments import stats
from tfhp import plots
from tfhp.launcher import cpu_load


def _median(record, key):
    value = record.get(key)
    return value['median'] if stats.is_summary(value) else value


def _mark(records, group_key, is_reference):
    for group in common.grouped(records, group_key).values():
        reference = next((r for r in group if is_reference(r)), None)
        if reference:
            stats.mark(group, reference, link_jobs.FIGURES)


def fit(points):
    """(intercept, slope, r squared) of the least-squares line through [(x, y)]; None for fewer
    than 2 distinct xs."""
    xs, ys = [x for x, _ in points], [y for _, y in points]
    n = len(points)
    if len(set(xs)) < 2:
        return None
    mean_x, mean_y = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mean_x) ** 2 for x in xs)
    slope = sum((x - mean_x) * (y - mean_y) for x, y in points) / sxx
    intercept = mean_y - slope * mean_x
    total = sum((y - mean_y) ** 2 for y in ys)
    residual = sum((y - intercept - slope * x) ** 2 for x, y in points)
    return intercept, slope, 1.0 - residual / total if total else 1.0


def _transfer(record):
    """A saturation record's transfer as figures name it (records from before the option: in
    turn), with the extra tfhp flags its jobs took and the name replotting gave its file."""
    return ', '.join([link_jobs.transfer_label(record.get('transfer', link_jobs.IN_TURN))] +
                     record.get('tfhp_flags', []) +
                     ([record['variant']] if record.get('variant') else []))


def _subject(record):
    """The model of a saturation record, its transfer unless the default (in turn), and the
    TCP congestion control where the record says it (since the option exists)."""
    transfer = _transfer(record)
    parts = [record['model']] + ([transfer] if transfer != link_jobs.IN_TURN else []) + (
        ['TCP ' + record['congestion_control']] if record.get('congestion_control') else [])
    return ', '.join(parts)


def _panel(record):
    """A saturation panel's subject: the model, and the TCP congestion control where the
    record says it; its transfers are series of the panel."""
    return ', '.join([record['model']] + (['TCP ' + record['congestion_control']]
                                          if record.get('congestion_control') else []))


def saturation_conclusion(records):
    """Lines: per model, rate and ps count, the step's growth per worker (a line fitted through
    the medians) against the in-turn estimate's, and that of the step less the same job's on
    loopback (the links' part) where loopback ran; per ps count above one, its step over 1
    ps's at each worker count."""
    lines = []
    loopback = {(_subject(r), r['num_ps'], r['num_workers']): _median(r, 'global_step_ms')
                for r in records if r['rate'] == 'loopback'}
    by_job = common.grouped(records, lambda r: (_subject(r), r['rate'], r['num_ps']))
    for (model, rate, k), group in by_job.items():
        steps = [(r['num_workers'], _median(r, 'global_step_ms')) for r in group
                 if _median(r, 'global_step_ms') is not None]
        measured = fit(steps)
        if not measured:
            continue
        line = '%s %s, %d ps: step = %.0f + %.0f ms x W (fit over W = %s, r^2 %.3f)' % (
            model, rate, k, measured[0], measured[1], ', '.join(str(w) for w, _ in steps),
            measured[2])
        estimate = fit([(r['num_workers'], r['turns_ms']) for r in group if r.get('turns_ms')])
        if estimate and estimate[1] > 0:
            line += '; the in-turn estimate grows %.0f ms per worker: measured / estimate %.2f' % (
                estimate[1], measured[1] / estimate[1])
        links_part = fit([(w, ms - loopback[(model, k, w)]) for w, ms in steps
                          if loopback.get((model, k, w)) is not None])
        if rate != 'loopback' and links_part:
            line += '; less loopback\'s step: %.0f + %.0f ms x W' % links_part[:2]
        lines.append(line)
    one_ps = {(_subject(r), r['rate'], r['num_workers']): r for r in records
              if r['num_ps'] == 1}
    for (model, rate, k), group in by_job.items():
        ratios = []
        for r in group:
            base = one_ps.get((model, rate, r['num_workers']))
            if k > 1 and base and _median(base, 'global_step_ms') and _median(
                    r, 'global_step_ms'):
                ratios.append('W=%d %.2f%s' % (r['num_workers'], _median(r, 'global_step_ms') /
                                               _median(base, 'global_step_ms'),
                                               _marked(r, 'global_step_ms')))
        if ratios:
            lines.append('%s %s, %d ps / 1 ps, step time: %s' % (model, rate, k,
                                                                 ', '.join(ratios)))
    return lines


def _marked(record, key):
    return ' *' if record.get('vs_reference', {}).get(key) in ('lower', 'higher') else ''


def cores_bound_line(records):
    """A line counting the rows whose cores were at least `cpu_load.CPU_BOUND` busy over the
    timed steps (median of the repeats), or None when none was: on a machine that runs every
    task, those steps are the cores' as much as the links'."""
    busy = [_median(r, 'cores_busy') for r in records]
    bound = sum(1 for b in busy if b is not None and b >= cpu_load.CPU_BOUND)
    if not bound:
        return None
    return ('cores busy: %d of %d rows had the cores at least %.0f%% busy over the timed steps: '
            'their steps are the cores\' as much as the links\'' % (
                bound, len(records), 100 * cpu_load.CPU_BOUND))


def _report(records, columns, reference, conclusion):
    common.print_table(records, columns, reference)
    for line in [cores_bound_line(records)] + conclusion(records):
        if line:
            print(line)


_LINK_COLUMNS = [('step ms', 'global_step_ms', '%.0f'), ('W S/(K B) ms', 'bound_ms', '%.0f'),
                 ('in turn ms', 'turns_ms', '%.0f'), ('step/in turn', 'vs_turns', '%.2f'),
                 ('timed bound ms', 'timed_comm_bound_ms', '%.0f'),
                 ('step/timed bound', 'vs_timed_bound', '%.2f'),
                 ('launcher bound ms', 'comm_bound_ms', '%.0f'),
                 ('cores busy', 'cores_busy', '%.2f')]


def report_saturation(records):
    _mark(records, lambda r: (_subject(r), r['rate'], r['num_workers']),
          lambda r: r['num_ps'] == 1)
    _report(records, [('model', 'model', None), ('transfer', 'transfer', None),
                      ('rate', 'rate', None), ('ps', 'num_ps', '%d'),
                      ('workers', 'num_workers', '%d')] + _LINK_COLUMNS + [
                          ('ps MB out', 'ps_sent_mb', '%.1f'),
                          ('ps MB in', 'ps_received_mb', '%.1f')],
            'the same job on 1 ps', saturation_conclusion)


def report_modes(records):
    _mark(records, lambda r: r['num_workers'], lambda r: r['label'] == presets.LINKS['ps'].label)

    def conclusion(done):
        lines = []
        for workers, group in common.grouped(done, lambda r: r['num_workers']).items():
            lines += stats.differences(
                'step ms, %d workers' % workers, [(r['label'], r['global_step_ms'])
                                                  for r in group if 'global_step_ms' in r],
                '%.0f', below='is faster than')
        return lines
    _report(records, [('mode', 'label', None), ('workers', 'num_workers', '%d'),
                      ('rate', 'rate', None)] + _LINK_COLUMNS + [
                          ('worker MB out', 'worker_sent_mb', '%.1f'),
                          ('worker MB in', 'worker_received_mb', '%.1f')],
            'parameter_server, 1 ps, on as many workers', conclusion)


def _sent(record):
    """How a precision record's job sent its gradients, and its variables when compressed
    (records from before --precision_downlinks have no 'downlink')."""
    downlink = record.get('downlink', 'none')
    return record['gradients'] + ('' if downlink == 'none' else ', %s down' % downlink)


def precision_conclusion(records):
    """Lines: per update and scheme, time saved vs float32 against bytes saved."""
    lines = []
    for update, group in common.grouped(records, lambda r: r['update']).items():
        base = next((r for r in group if _sent(r) == 'float32'), None)
        for r in group:
            if r is base or not base:
                continue
            step, step32 = _median(r, 'global_step_ms'), _median(base, 'global_step_ms')
            up, up32 = _median(r, 'worker_sent_mb'), _median(base, 'worker_sent_mb')
            down, down32 = (_median(r, 'worker_received_mb'),
                            _median(base, 'worker_received_mb'))
            if None in (step, step32, up, up32, down, down32):
                continue
            lines.append(
                '%s, %s: step %.0f%% shorter than float32%s; a worker sends %.2f of float32\'s '
                'bytes (%.1f of %.1f MB) and receives %.2f; its link carries %.0f%% fewer bytes'
                % (update, _sent(r), 100.0 * (1 - step / step32),
                   _marked(r, 'global_step_ms'), up / up32, up, up32, down / down32,
                   100.0 * (1 - (up + down) / (up32 + down32))))
    return lines


def report_precision(records):
    _mark(records, lambda r: r['update'], lambda r: _sent(r) == 'float32')
    for r in records:
        r['sent'] = _sent(r)
    _report(records, [('update', 'update', None), ('sent', 'sent', None),
                      ('workers', 'num_workers', '%d'), ('rate', 'rate', None)] +
            _LINK_COLUMNS + [('worker MB out', 'worker_sent_mb', '%.2f'),
                             ('worker MB in', 'worker_received_mb', '%.2f'),
                             ('ps MB in', 'ps_received_mb', '%.1f')],
            'the same update in float32', precision_conclusion)


def backup_conclusion(records):
    """Lines: per rate, what the straggler costs without and with a backup worker."""
    lines = []
    for rate, group in common.grouped(records, lambda r: r['rate']).items():
        by = {r['configuration']: _median(r, 'global_step_ms') for r in group}
        base = by.get('every gradient, no straggler')
        if not base:
            continue
        parts = ['%s %.2f%s' % (r['configuration'], by[r['configuration']] / base,
                                _marked(r, 'global_step_ms'))
                 for r in group if by[r['configuration']] and r['configuration'] != (
                     'every gradient, no straggler')]
        lines.append('%s: global step time over every gradient without a straggler (%.0f ms): '
                     '%s' % (rate, base, ', '.join(parts)))
    return lines


def report_backup(records):
    _mark(records, lambda r: r['rate'], lambda r: r['configuration'] == (
        'every gradient, no straggler'))
    _report(records, [('rate', 'rate', None), ('configuration', 'configuration', None),
                      ('R', 'replicas_to_aggregate', '%d'), ('workers', 'num_workers', '%d'),
                      ('step ms', 'global_step_ms', '%.0f'),
                      ('images/s', 'images_per_sec', '%.1f'),
                      ('dropped', 'dropped_gradients', '%d'),
                      ('timed bound ms', 'timed_comm_bound_ms', '%.0f'),
                      ('step/timed bound', 'vs_timed_bound', '%.2f'),
                      ('cores busy', 'cores_busy', '%.2f'),
                      ('ps MB out', 'ps_sent_mb', '%.1f'), ('ps MB in', 'ps_received_mb',
                                                            '%.1f')],
            'every gradient awaited without a straggler, at the same rate', backup_conclusion)


REPORTS = {'saturation': report_saturation, 'modes': report_modes,
           'precision': report_precision, 'backup': report_backup}


# Style of a computed line (a bound, an estimate) beside the measured series.
_COMPUTED = {'marker': None, 'capsize': 0, 'dodge': False, 'linewidth': 1}


def _exact(values):
    return [None if v is None else stats.summarise([v]) for v in values]


def plot_saturation(records, path, caption=None):
    """Step time vs workers, a panel per model and rate; a colour per ps count (and transfer,
    where a panel has several, so that they compare on one axis): measured (median, min-max),
    the in-turn estimate dashed, the per-direction bound dotted (black beside several
    transfers: the estimates are the model's and the rate's, not a transfer's). A panel of
    one transfer names it in its title, and its series are coloured by ps count alone, so
    that a legend entry has one colour in every panel. Series go by ps count, each along its
    worker counts, whatever order the records came in (a file appended to by several runs)."""
    records = sorted(records, key=lambda r: (r['num_ps'], r['num_workers']))  # stable

    def line(r):
        return _transfer(r), r['num_ps']
    by_panel = common.grouped(records, lambda r: (_panel(r), r['rate']))
    several = {key for key, group in by_panel.items() if len({_transfer(r) for r in group}) > 1}

    def key(panel, r):  # what the legend shows of a series
        return (_transfer(r) if panel in several else None), r['num_ps']
    keys = list(dict.fromkeys(key(p, r) for p, group in by_panel.items() for r in group))
    panels = []
    for (model, rate), group in by_panel.items():
        transfers = {_transfer(r) for r in group}
        series, estimated = [], set()
        for (transfer, k), rows in common.grouped(group, line).items():
            xs = [r['num_workers'] for r in rows]
            index = keys.index(key((model, rate), rows[0]))
            label = '%d ps, %s' % (k, transfer if len(transfers) > 1 else 'measured')
            series.append((label, xs, [r.get('global_step_ms') for r in rows],
                           {'color': 'C%d' % index}))
            if k in estimated or not any(r.get('turns_ms') for r in rows):
                continue
            estimated.add(k)
            color = 'black' if len(transfers) > 1 else 'C%d' % index
            series.append(('%d ps, reads and gradients in turn' % k, xs,
                           _exact([r.get('turns_ms') for r in rows]),
                           dict(_COMPUTED, color=color, linestyle='--')))
            series.append(('%d ps, W S / (K B)' % k, xs, _exact([r.get('bound_ms') for r in rows]),
                           dict(_COMPUTED, color=color, linestyle=':')))
        named = [] if len(transfers) > 1 or transfers == {link_jobs.IN_TURN} else list(transfers)
        panels.append((', '.join([model] + named + ['%s links' % rate]), series, []))
    workers = sorted({r['num_workers'] for r in records})
    # Panels of one rate (models side by side) compare on one y axis.
    plots.line_panels(path, panels, 'workers', 'global step time, ms',
                      title='parameter-server saturation on emulated links: %s'
                      % plots.spread_text([r.get('repeats', 1) for r in records]),
                      xticks=[(w, str(w)) for w in workers],
                      sharey=len({r['rate'] for r in records}) == 1, caption=caption)


def plot_modes(records, path, caption=None):
    """Step time vs workers per mode, measured and, dotted, its duplex bound: the busiest NIC's
    measured bytes in one direction over its rate in the timed steps (modes that move the
    same bytes share a bound line); the gap between the two is what the mode leaves unused."""
    series = []
    for index, (label, rows) in enumerate(common.grouped(records, lambda r: r['label']).items()):
        xs = [r['num_workers'] for r in rows]
        series.append((label, xs, [r.get('global_step_ms') for r in rows],
                       {'color': 'C%d' % index}))
        bound = [_median(r, 'timed_comm_bound_ms') for r in rows]
        if any(bound):
            series.append(('_bound', xs, _exact(bound), dict(_COMPUTED, color='C%d' % index,
                                                             linestyle=':')))
    workers = sorted({r['num_workers'] for r in records})
    plots.line_panels(path, [('%s on %s links' % (records[0]['model'], records[0]['rate']),
                              series, [])], 'workers', 'global step time, ms',
                      title='synchronous modes, dotted: each one\'s duplex bound; %s'
                      % plots.spread_text([r.get('repeats', 1) for r in records]),
                      xticks=[(w, str(w)) for w in workers],
                      caption=caption)


def plot_precision(records, path, caption=None):
    """Bars: step time, and a worker's bytes sent and received per step. Groups: the updates,
    a bar per way gradients are sent; with compressed downlinks, a group per update and way
    gradients go up, a bar per way the variables come down."""
    downlinks = common.grouped(records, lambda r: r.get('downlink', 'none'))
    several_updates = len(common.grouped(records, lambda r: r['update'])) > 1
    if len(downlinks) > 1:
        def group(r):
            return ('%s, %s' % (r['update'], r['gradients']) if several_updates else
                    '%s up' % r['gradients'])
        bar = lambda r: '%s down' % ('float32' if r.get('downlink', 'none') == 'none'
                                     else r['downlink'])
        what = 'gradients up (groups) and variables down (bars) in float32 or compressed'
    else:
        group, bar = (lambda r: r['update']), _sent
        what = 'gradients sent in float32 or compressed'
    groups = list(common.grouped(records, group))
    by = {(group(r), bar(r)): r for r in records}
    bars = list(common.grouped(records, bar))

    def series(key):
        return [(b, [by.get((g, b), {}).get(key) for g in groups]) for b in bars]
    plots.bar_panels(path, [('global step time', 'ms', groups, series('global_step_ms')),
                            ('a worker sends per step', 'MB', groups,
                             series('worker_sent_mb')),
                            ('a worker receives per step', 'MB', groups,
                             series('worker_received_mb'))],
                     title='%s, %d workers on %s links: %s' % (
                         what, records[0]['num_workers'], records[0]['rate'],
                         plots.spread_text([r.get('repeats', 1) for r in records])),
                     caption=caption)


def plot_backup(records, path, caption=None):
    """Bars: global step time and dropped gradients per rate and configuration."""
    rates = list(common.grouped(records, lambda r: r['rate']))
    by = {(r['rate'], r['configuration']): r for r in records}
    configurations = list(common.grouped(records, lambda r: r['configuration']))

    def series(key):
        return [(c, [by.get((rate, c), {}).get(key) for rate in rates])
                for c in configurations]
    plots.bar_panels(path, [('global step time', 'ms', rates, series('global_step_ms')),
                            ('late gradients dropped (timed steps)', 'gradients', rates,
                             series('dropped_gradients'))],
                     title='one straggler, one backup worker (%d workers, 1 ps): %s' % (
                         records[0]['num_workers'],
                         plots.spread_text([r.get('repeats', 1) for r in records])),
                     caption=caption)


PLOTS = {'saturation': plot_saturation, 'modes': plot_modes, 'precision': plot_precision,
         'backup': plot_backup}

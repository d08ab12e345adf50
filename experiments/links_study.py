"""The trade-offs of distributed training on emulated network links, on one machine.

Every job runs through `tfhp.launch` with each task in a network namespace of its own and a NIC
shaped by a token bucket both ways (`tfhp.launcher.links`; needs root), so the link, not
loopback's memory speed, carries the parameters. Studies (--studies):
  saturation  parameter-server step time vs workers (--workers) with 1, 2, 3 ps tasks
              (--num_ps), at each link rate (--rates), for the dense null model (16 MiB, no
              compute) and a real small model (lenet, 6.7 MB), next to the bound W x S / (K x B)
              of the ps NIC per direction and the estimate of a synchronous step whose reads and
              gradients take turns (twice that); `*`: range apart from the same job on 1 ps.
              --saturation_transfers=pipelined adds the pipelined push-pull, whose step should
              come to the bound (`step/timed bound`: over the busiest NIC's measured bytes).
  modes       parameter_server (1 and 2 ps) vs distributed_replicated vs collective all-reduce
              (gradient by gradient, in 4 MiB fusion buckets, in one pack), synchronous, at one
              rate (--modes_rate); `*`: apart from parameter_server, 1 ps.
  precision   gradients sent in float32 vs each scheme of --precision_schemes (default bfloat16,
              float16; any --gradient_compression: sign, topk, randomk, ...) for each of
              --precision_updates at one rate: time saved against bytes saved; `*`: apart
              from the same job in float32. --precision_downlinks adds, for the updates
              whose workers keep copies (distributed_replicated), variables sent back as
              compressed deltas (--downlink_compression) with each gradient scheme;
              --precision_fraction sets the sparse schemes' share of elements.
  backup      one straggler (--straggler_delay_ms in its compute) and one backup worker
              (--replicas_to_aggregate = workers - 1), on loopback and on a shaped link;
              `*`: apart from every gradient awaited without a straggler at the same rate.
Each job runs --repeats times (seeds --tf_random_seed + r), in rounds over all jobs; figures are
median [min-max] (experiments/stats.py; `link_jobs.py` defines them). Bytes per step are those
of the chief's timed steps (`tfhp.launcher.link_traffic`). Prints a table and a conclusion per
study and one JSON line per job (--result_file); --plot draws each study (PATH.png, or
PATH_<study>.png when several run).

  python -m experiments.links_study --studies=saturation --plot=saturation.png
  python -m experiments.links_study --studies=saturation --workers=1,2,3,4,5,6 --num_ps=1,2,3
  python -m experiments.links_study --studies=modes,precision,backup --repeats=3
  python -m experiments.links_study --studies=saturation --models=null_dense \
      --saturation_transfers=pipelined --num_ps=1,2,3 --link_congestion_control=cubic
  python -m experiments.links_study --studies=saturation --replot=a.jsonl,b.jsonl --plot=s.png
The --link_* flags set how the links behave, as the launcher's do (tfhp.launcher.links).
"""
import functools
import json
import os
import sys

from absl import app
from absl import flags

from experiments import common
from experiments import frame
from experiments import link_flags
from experiments import link_jobs
from experiments import links_report
from experiments import presets
from experiments import stats
from tfhp import compression
from tfhp import modes
from tfhp import provenance
from tfhp.launcher import link_config
from tfhp.launcher import links

FLAGS = flags.FLAGS
STUDIES = ('saturation', 'modes', 'precision', 'backup')


def define_flags():
    """Defines the study's own flags (only when run as a script, so tests can import it)."""
    flags.DEFINE_list('studies', list(STUDIES), 'Studies to run: %s.' % ', '.join(STUDIES))
    flags.DEFINE_list('models', ['null_dense', 'lenet'], 'saturation: models (%s, or a '
                      'profile\'s <model>@emulated).' % ', '.join(link_jobs.MODELS))
    flags.DEFINE_list('emulated_compute', [], 'Compute profiles (python -m tfhp.calibrate) '
                      'whose emulated models every study may name as <model>@emulated: any '
                      'model of the zoo, its compute waited, not run on the shared cores.')
    flags.DEFINE_list('rates', ['300mbit', '1gbit'], 'saturation: link rates (tc units, or '
                      'loopback).')
    flags.DEFINE_list('workers', ['1', '2', '4', '6'], 'saturation: worker counts.')
    flags.DEFINE_list('num_ps', ['1', '2'], 'saturation: ps task counts.')
    flags.DEFINE_list('saturation_transfers', [link_jobs.IN_TURN], 'saturation: how workers '
                      'reach the ps tasks: "%s" (parameter_server: variables down, then '
                      'gradients up), "%s" (distributed_replicated, --ps_transfer=pipelined, '
                      '%d-byte chunks: '
                      'each chunk pulled once applied, while later ones are pushed), "%s" '
                      '(the same with background pulls: the next forward pass starts on '
                      'the chunks already back), "%s", "%s"; a pipelined one may end in '
                      '@CHUNK/WINDOW, tc sizes of its chunks and window, e.g. "%s@256k/256k"; any '
                      'may end in +SLICE, the dense layers built in slices of at most that '
                      '(--layer_slice_bytes), e.g. "%s+256k".'
                      % (link_jobs.IN_TURN, link_jobs.PIPELINED, presets.PIPELINE_BYTES,
                         link_jobs.BACKGROUND, link_jobs.WINDOW, link_jobs.PRIORITY,
                         link_jobs.PRIORITY, link_jobs.WINDOW))
    link_flags.define()
    flags.DEFINE_list('tfhp_flags', [], 'Extra tfhp flags for every job of every study (e.g. '
                      '--ps_chunk_bytes=1048576); records and labels name them.')
    flags.DEFINE_list('replot', None, 'Draw --plot from these JSON-lines files of records (of '
                      'several runs: a panel per model, transfer and rate; a row run several '
                      'times is one median [min-max] of its runs) and run nothing. '
                      'FILE=NAME: its records are lines of their own, named NAME (e.g. the '
                      'same study run at two commits).')
    flags.DEFINE_list('modes', list(presets.LINKS), 'modes: the modes (%s).' % ', '.join(
        '%s: %s' % (name, preset.label) for name, preset in presets.LINKS.items()))
    flags.DEFINE_string('modes_model', 'null_dense', 'modes: model.')
    flags.DEFINE_string('modes_rate', '1gbit', 'modes: link rate.')
    flags.DEFINE_list('modes_workers', ['2', '4'], 'modes: worker counts.')
    flags.DEFINE_string('precision_model', 'null_dense', 'precision: model.')
    flags.DEFINE_string('precision_rate', '1gbit', 'precision: link rate.')
    flags.DEFINE_integer('precision_workers', 2, 'precision: workers.')
    flags.DEFINE_list('precision_updates', ['parameter_server', 'collective_all_reduce'],
                      'precision: variable updates (%s).' % ', '.join(BETWEEN_GRAPH))
    flags.DEFINE_list('precision_schemes', list(SCHEMES), 'precision: how gradients cross the '
                      'links: float32, or a --gradient_compression scheme (%s).'
                      % ', '.join(compression.names()[1:]))
    flags.DEFINE_list('precision_downlinks', [compression.NONE], 'precision: how the variables '
                      'come back, for the updates that can send deltas: none (as they are), '
                      'or a --downlink_compression scheme.')
    flags.DEFINE_float('precision_fraction', None, 'precision: the share of the elements the '
                       'sparse schemes send (--compression_fraction; default: theirs, 0.01).')
    flags.DEFINE_string('backup_model', 'null_dense', 'backup: model.')
    flags.DEFINE_list('backup_rates', ['loopback', '1gbit'], 'backup: link rates.')
    flags.DEFINE_integer('backup_workers', 3, 'backup: workers (one of them the straggler).')
    flags.DEFINE_float('straggler_delay_ms', 1000.0, 'backup: the straggler\'s delay per step.')


def _row(labels, num_ps, num_workers, args, rate, link_options, colocate_ps=False):
    return functools.partial(link_jobs.measure, labels, num_ps, num_workers, args, rate,
                             link_options=link_options, colocate_ps=colocate_ps)


def with_flags(rows, tfhp_flags):
    """`rows` whose jobs also take `tfhp_flags` (appended to each job's own), their records
    saying so (`tfhp_flags`, and the label)."""
    if not tfhp_flags:
        return rows
    changed = []
    for row in rows:
        labels, num_ps, num_workers, args, rate = row.args
        labels = dict(labels, tfhp_flags=list(tfhp_flags),
                      label='%s, %s' % (labels['label'], ' '.join(tfhp_flags)))
        changed.append(functools.partial(row.func, labels, num_ps, num_workers,
                                         list(args) + list(tfhp_flags), rate, **row.keywords))
    return changed


def saturation_rows(models, rates, num_ps, workers, steps, warmup_steps,
                    transfers=(link_jobs.IN_TURN,), link_options=None):
    """Measurements (seed -> record): every model x transfer (`link_jobs.transfer_args` specs) x
    rate x ps count x worker count, on links that behave as `link_options` says (None: the
    defaults; so for every study)."""
    return [_row({'study': 'saturation', 'model': model, 'transfer': transfer,
                  'label': '%s %s, %s, %d ps' % (model, rate, transfer, k)}, k, w,
                 link_jobs.job_args(model, steps, warmup_steps, link_jobs.transfer_args(transfer)),
                 rate, link_options)
            for model in models for transfer in transfers for rate in rates for k in num_ps
            for w in workers]


def modes_rows(model, rate, workers, steps, warmup_steps, names=tuple(presets.LINKS),
               link_options=None):
    """Measurements of each mode (`presets.LINKS` names) on `rate` links, per worker count."""
    return [_row({'study': 'modes', 'model': model, 'label': presets.LINKS[m].label},
                 w if presets.LINKS[m].colocated_ps else presets.LINKS[m].ps_tasks, w,
                 link_jobs.job_args(model, steps, warmup_steps, presets.LINKS[m].args()), rate,
                 link_options, presets.LINKS[m].colocated_ps)
            for w in workers for m in names]


# How gradients cross the links (--precision_schemes' default): float32, or a
# --gradient_compression scheme.
SCHEMES = ('float32', 'bfloat16', 'float16')
# The variable updates of a job of workers (--precision_updates' choices).
BETWEEN_GRAPH = modes.names(lambda s: s.graph_per_worker)


def precision_rows(model, rate, num_workers, updates, steps, warmup_steps, schemes=SCHEMES,
                   link_options=None, downlinks=(compression.NONE,), fraction=None):
    """Measurements of each update with gradients sent in each scheme ('float32': as they are;
    a scheme that cannot be summed is left out of the workers' all-reduce, which refuses it),
    and the variables sent back in each of `downlinks` where the update can send deltas;
    `fraction`: --compression_fraction for the jobs whose schemes take one (None: theirs)."""
    rows = []
    for update in updates:
        strategy = modes.strategy(update)
        for scheme in schemes:
            compressor = compression.get(scheme if scheme != 'float32' else compression.NONE)
            if strategy.worker_all_reduce and compressor and not compressor.summable:
                continue
            for downlink in downlinks if strategy.downlink_deltas else (compression.NONE,):
                sparse = fraction is not None and any(
                    compression.takes_fraction(s) for s in (scheme, downlink))
                rows.append(_row(
                    {'study': 'precision', 'model': model, 'update': update,
                     'gradients': scheme, 'downlink': downlink,
                     'label': '%s, %s%s' % (update, scheme, '' if downlink == compression.NONE
                                            else ', %s down' % downlink)},
                    0 if strategy.worker_all_reduce else 1, num_workers,
                    link_jobs.job_args(model, steps, warmup_steps, [
                        '--variable_update=' + update] + (
                            ['--gradient_compression=' + scheme] if compressor else []) + (
                            [] if downlink == compression.NONE else
                            ['--downlink_compression=' + downlink]) + (
                            ['--compression_fraction=%g' % fraction] if sparse else [])),
                    rate, link_options))
    return rows


def backup_configurations(num_workers, delay_ms):
    """[(label, replicas to aggregate, tfhp flags)]; the last worker is the straggler."""
    straggler = ['--straggler_workers=%d' % (num_workers - 1), '--straggler_mode=compute',
                 '--straggler_delay_ms=%g' % delay_ms]
    return [('every gradient, no straggler', num_workers, []),
            ('every gradient, straggler', num_workers, straggler),
            ('one backup, straggler', num_workers - 1, straggler),
            ('one backup, no straggler', num_workers - 1, [])]


def backup_rows(model, rates, num_workers, delay_ms, steps, warmup_steps, link_options=None):
    """Measurements of each backup configuration at each rate, 1 ps."""
    return [_row({'study': 'backup', 'model': model, 'configuration': label,
                  'replicas_to_aggregate': r, 'label': '%s, %s' % (rate, label)}, 1,
                 num_workers, link_jobs.job_args(model, steps, warmup_steps, args + [
                     '--replicas_to_aggregate=%d' % r]), rate, link_options)
            for rate in rates for label, r, args in backup_configurations(num_workers,
                                                                           delay_ms)]


def _ints(values):
    return [int(v) for v in values]


def rows(studies):
    """{study: its measurements}, from the flags."""
    steps = (FLAGS.steps, FLAGS.warmup_steps)
    options = link_flags.options()
    make = {
        'saturation': lambda: saturation_rows(FLAGS.models, FLAGS.rates, _ints(FLAGS.num_ps),
                                              _ints(FLAGS.workers), *steps,
                                              transfers=FLAGS.saturation_transfers,
                                              link_options=options),
        'modes': lambda: modes_rows(FLAGS.modes_model, FLAGS.modes_rate,
                                    _ints(FLAGS.modes_workers), *steps, names=FLAGS.modes,
                                    link_options=options),
        'precision': lambda: precision_rows(FLAGS.precision_model, FLAGS.precision_rate,
                                            FLAGS.precision_workers, FLAGS.precision_updates,
                                            *steps, schemes=FLAGS.precision_schemes,
                                            link_options=options,
                                            downlinks=FLAGS.precision_downlinks,
                                            fraction=FLAGS.precision_fraction),
        'backup': lambda: backup_rows(FLAGS.backup_model, FLAGS.backup_rates,
                                      FLAGS.backup_workers, FLAGS.straggler_delay_ms, *steps,
                                      link_options=options),
    }
    return {study: with_flags(make[study](), FLAGS.tfhp_flags) for study in studies}


def plot_path(path, study, several):
    """PATH, or PATH_<study>.png when several studies share --plot."""
    if not several:
        return path
    root, ext = os.path.splitext(path)
    return '%s_%s%s' % (root, study, ext or '.png')


def _check_flags():
    common.check_choices('studies', FLAGS.studies, STUDIES)
    for path in FLAGS.emulated_compute:
        try:
            link_jobs.add_emulated(path)
        except ValueError as e:
            raise app.UsageError('--emulated_compute: %s' % e) from None
    common.check_choices('models', FLAGS.models + [FLAGS.modes_model, FLAGS.precision_model,
                                                   FLAGS.backup_model], link_jobs.MODELS)
    common.check_choices('modes', FLAGS.modes, presets.LINKS)
    link_jobs.check_transfers('saturation_transfers', FLAGS.saturation_transfers)
    common.check_choices('precision_updates', FLAGS.precision_updates, BETWEEN_GRAPH)
    common.check_choices('precision_schemes', FLAGS.precision_schemes,
                         ('float32',) + compression.names()[1:])
    common.check_choices('precision_downlinks', FLAGS.precision_downlinks, compression.names())
    fraction = FLAGS.precision_fraction
    if fraction is not None and not 0 < fraction <= 1:
        raise app.UsageError('--precision_fraction must be in (0, 1], got %r' % fraction)
    if FLAGS.backup_workers < 2:
        raise app.UsageError('--backup_workers=%d: a backup needs at least 2 workers'
                             % FLAGS.backup_workers)
    for rate in FLAGS.rates + FLAGS.backup_rates + [FLAGS.modes_rate, FLAGS.precision_rate]:
        if rate != 'loopback':
            link_config.parse_rate(rate)
    link_flags.options()


def named(record, variant):
    """`record` as a line of its own named `variant` (its label and transfer say it; '':
    as it is)."""
    if not variant:
        return record
    return dict(record, variant=variant, label='%s, %s' % (record['label'], variant))


# What differs between two runs of one row, beside its figures (job: a run's whole summary,
# kept where a record has one run; a job whose end failed after its timed steps has figures).
_PER_RUN = ('caption', 'repeats', 'runs', 'seeds', 'job', 'status', 'error')


def merged(records):
    """One record per row of `records`: rows repeated (the same study, model, transfer, rate,
    tasks, flags and name; e.g. alternating invocations of --repeats=1) have their runs
    combined into one median [min-max] (`stats.combine`), captioned with all their captions.
    Records without their runs (written before they kept them) stay as they are."""
    def row(record):
        return json.dumps({k: v for k, v in record.items()
                           if k not in link_jobs.FIGURES and k not in _PER_RUN}, sort_keys=True)
    rows = []
    for group in common.grouped(records, row).values():
        if len(group) == 1 or not all('runs' in r for r in group):
            rows += group
            continue
        record = stats.combine([run for r in group for run in r['runs']], link_jobs.FIGURES,
                               [seed for r in group for seed in r.get('seeds', [])] or None)
        record.update(json.loads(row(group[0])), caption=provenance.join(
            sorted({r['caption'] for r in group if r.get('caption')})))
        rows.append(record)
    return rows


def replot(paths, studies, path):
    """Draws each study of `studies` at `path` (`plot_path`) from the records in the JSON-lines
    files at `paths` ('FILE=NAME': `named` NAME), a row run several times `merged`, captioned
    with their runs' captions (`provenance.join`); runs nothing.

    Raises:
      ValueError: no records of those studies in the files.
    """
    records = []
    for entry in paths:
        records_file, _, variant = entry.partition('=')
        with open(records_file) as f:
            records += [named(r, variant) for r in map(json.loads, filter(str.strip, f))
                        if r.get('study') in studies]
    if not records:
        raise ValueError('--replot: no records of %s in %s' % (', '.join(studies),
                                                               ', '.join(paths)))
    records = merged(records)
    drawn = [name for name in studies if any(r['study'] == name for r in records)]
    for name in drawn:
        done = [r for r in records if r['study'] == name]
        caption = provenance.join(sorted({r['caption'] for r in done if r.get('caption')}))
        common.draw(lambda out: links_report.PLOTS[name](done, out, caption or None),
                    plot_path(path, name, len(drawn) > 1))


def study():
    """The studies of --studies, measured in rounds over all their jobs, each reported; or,
    with --replot, drawn again from written records."""
    if FLAGS.replot:
        if not FLAGS.plot:
            raise app.UsageError('--replot draws --plot: give --plot')
        replot(FLAGS.replot, FLAGS.studies, FLAGS.plot)
        return 0
    try:
        _check_flags()
        links.check_available()
    except ValueError as e:  # LinksUnavailable and a bad rate are ValueErrors
        print('links_study: %s' % e, file=sys.stderr)
        return 2
    measures = rows(FLAGS.studies)
    # Said as the run starts: the commit measured, not the one a later redraw is made at.
    caption = provenance.caption()
    order = [(name, i) for name in FLAGS.studies for i in range(len(measures[name]))]
    records = common.repeat_in_rounds([measures[s][i] for s, i in order], FLAGS.repeats,
                                      FLAGS.seed, link_jobs.FIGURES)
    for name in FLAGS.studies:
        done = [dict(r, caption=caption) for (s, _), r in zip(order, records) if s == name]
        links_report.REPORTS[name](done)
        common.write_records(done, FLAGS.result_file)
        if FLAGS.plot:
            common.draw(lambda path: links_report.PLOTS[name](done, path, caption),
                        plot_path(FLAGS.plot, name, len(FLAGS.studies) > 1))
    return 0


if __name__ == '__main__':
    define_flags()
    frame.main(study, steps=5, warmup_steps=1,
               plot='each study (PATH_<study>.png when several run)')

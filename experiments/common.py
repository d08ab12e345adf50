"""What the experiment scripts share: runs in subprocesses, the learnable data set, tables, JSON.

  run_tfhp      one `python -m tfhp` configuration in a subprocess (`tfhp.sweep.run_tfhp`)
  run_cluster   one multi-process job on this machine (`tfhp.launch`), every task's result back
  run_child     a script's own configuration in a child process, its JSON record back
  learnable_data  the small learnable image data set the convergence studies train on
  cluster_figures, link_figures  the figures a study reads from the launcher's job summary
                (one place), the second those of its emulated links
  run_in_rounds, repeat_in_rounds  each row's measurement once per repeat, rows in turn, a
                seed per repeat; the second also summarises them
  print_table, write_records   the readable table and the JSON lines of a study
  check_choices  a list flag's values checked against the script's choices
  check_plot    --plot refused at once (exit status 2) without matplotlib or a writable path
"""
import collections
import contextlib
import io
import json
import os
import subprocess
import sys

from absl import app

from experiments import stats
from tfhp import config as config_lib
from tfhp.launcher import local_job
from tfhp import plots
from tfhp import sweep
from tfhp import timing
from tfhp.config import paths
from tfhp.data import info as info_lib
from tfhp.data import synthetic
from tfhp.launcher import link_traffic
from tfhp.launcher import private_net

run_tfhp = sweep.run_tfhp

# A job's outcome: the launcher's summary, {(job, index): result dict} of every worker (and
# controller) that wrote one, and the end of the job's output when it failed (else None).
ClusterRun = collections.namedtuple('ClusterRun', ['summary', 'results', 'error'])


def run_cluster(num_ps, num_workers, tfhp_args, timeout_s=600.0, link_bandwidth=None,
                ps_link_bandwidth=None, link_options=None, colocate_ps=False):
    """Runs one job, every task its own process (`tfhp.launcher.local_job.launch_job`), on
    loopback or on emulated links of the given rates that behave as `link_options` says
    (`tfhp.launcher.link_config.LinkOptions`; None: its defaults), with colocate_ps ps task k on
    worker k's host.

    On links, every task's NIC counters are also sampled while the job runs
    (`tfhp.launcher.link_traffic`), and the summary's 'links' gets 'timed': the bytes per
    global step of the chief's timed steps alone, and their bound (None where there is no
    timed window).
    Returns:
      A `ClusterRun`.
    """
    output = io.StringIO()
    sampler = link_traffic.NicSampler() if link_bandwidth else contextlib.nullcontext()
    with sampler:
        summary, results = local_job.launch_job(num_ps, num_workers, list(tfhp_args),
                                                timeout_s=timeout_s,
                                                link_bandwidth=link_bandwidth,
                                                ps_link_bandwidth=ps_link_bandwidth,
                                                link_options=link_options, out=output,
                                                colocate_ps=colocate_ps)
    if 'links' in summary:
        summary['links']['timed'] = link_traffic.timed_report(
            sampler.samples, summary['links']['tasks'], results.get(('worker', 0), {}))
    lines = output.getvalue().splitlines()
    status = summary['status']
    error = None if status == 0 else ' | '.join(lines[-6:]) or 'exit status %d' % status
    return ClusterRun(summary, results, error)


def cluster_figures(summary):
    """The job figures the studies report, read from a launcher summary (`cluster_summary`).

    The only place the experiments read the launcher's summary keys, so that a renamed key is
    a one-line change.
    Returns:
      {'images_per_sec': every worker's images per second of the job, 'global_steps_per_sec':
       the chief's (None where there is no chief figure), 'dropped_gradients': the
       synchronous job's late gradients, summed over the workers}.
    """
    return {'images_per_sec': summary.get('cluster_images_per_sec'),
            'global_steps_per_sec': summary.get('global_steps_per_sec'),
            'dropped_gradients': summary.get('dropped_gradients', 0)}


def link_figures(summary):
    """The link figures of a job on emulated links, read from its summary (see run_cluster).

    Returns:
      {} on loopback; else {'comm_bound_ms': the launcher's (start-up bytes included),
       'timed_comm_bound_ms': the timed steps' (None without a timed window), 'link_bytes':
       {task: (bytes sent, bytes received) per global step of the timed steps, or of the
       whole job without a timed window}, 'link_bps': {task: its NIC's rate}}.
    """
    links = summary.get('links')
    if not links:
        return {}
    timed = links.get('timed')
    per_step = timed['tasks'] if timed else {
        name: t for name, t in links['tasks'].items() if 'bytes_sent_per_step' in t}
    return {'comm_bound_ms': links.get('comm_bound_ms'),
            'timed_comm_bound_ms': timed['comm_bound_ms'] if timed else None,
            'link_bytes': {name: (t['bytes_sent_per_step'], t['bytes_received_per_step'])
                           for name, t in per_step.items()},
            'link_bps': {name: t['link_bps'] for name, t in links['tasks'].items()}}


def own_network(study):
    """Moves this process, which starts TensorFlow servers in itself, into a network namespace
    whose only interface is a loopback (`private_net.enter`), before it starts any; where it
    cannot, says once that they listen on the machine's network, and why."""
    why = private_net.enter()
    if why:
        print('%s: its servers listen on every interface of this machine while it runs, open to '
              'anyone who reaches it (%s; docs/security.md)' % (study, why))


def run_in_rounds(measures, repeats, base_seed):
    """Runs every row's measurement once per repeat, in rounds.

    Round r runs every row with seed base_seed + r before round r + 1 starts, so that a slow
    spell of a shared machine hits the rows alike instead of one row's repeats.
    Args:
      measures: one callable per row, seed -> a JSON-ready record (a dict).
      repeats: rounds.
      base_seed: the first round's seed (the studies' --tf_random_seed).
    Returns:
      (seeds, runs): runs[row] lists that row's records in round order.
    Raises:
      app.UsageError: repeats < 1 (the scripts' --repeats).
    """
    if repeats < 1:
        raise app.UsageError('--repeats=%d: must be at least 1' % repeats)
    seeds = [base_seed + r for r in range(repeats)]
    runs = [[] for _ in measures]
    for seed in seeds:
        for measure, row_runs in zip(measures, runs):
            row_runs.append(measure(seed))
    return seeds, runs


def repeat_in_rounds(measures, repeats, base_seed, figures):
    """`run_in_rounds`, then one combined record per row (`stats.combine` of figures)."""
    seeds, runs = run_in_rounds(measures, repeats, base_seed)
    return [stats.combine(row_runs, figures, seeds) for row_runs in runs]


def draw(plot_one, path):
    """Draws a figure with plot_one(file) at `path` and as an SVG beside it
    (`plots.draw_with_svg`), printing each file written: every study's --plot gets its vector
    twin."""
    for out in plots.draw_with_svg(plot_one, path):
        print('Wrote %s' % out)


def check_plot(path):
    """Before any work: exits with status 2 and one line when --plot cannot be written.

    Without matplotlib the line is the install hint (`tfhp.plots.INSTALL_HINT`); a path that
    cannot be written is named with why (`check_output`).
    """
    if path:
        try:
            plots.check_available()
        except plots.PlotsUnavailable as e:
            print(e, file=sys.stderr)
            sys.exit(2)
        check_output('plot', path)


def check_output(flag, path):
    """Before any work: exits with status 2 and one line naming --flag's path and why, when
    that file cannot be written (`tfhp.config.paths`); None: nothing to check."""
    if path:
        try:
            paths.check_output_file(flag, path)
        except config_lib.ConfigError as e:
            print(e, file=sys.stderr)
            sys.exit(2)


# The checkout holding the `experiments` package: children run `python -m` from there.
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_child(module, args, timeout_s=600.0):
    """Runs `python -m <module> <args>` from the checkout; its last output line must be JSON.

    For configurations that need a process of their own (e.g. in-process gRPC servers, which
    TensorFlow cannot stop).
    Returns:
      (record, None), or (None, why it failed).
    """
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
    try:
        proc = subprocess.run([sys.executable, '-m', module] + list(args), capture_output=True,
                              text=True, timeout=timeout_s, env=env, cwd=REPO_ROOT)
    except subprocess.TimeoutExpired:
        return None, 'timed out after %g s' % timeout_s
    lines = proc.stdout.strip().splitlines()
    if proc.returncode or not lines:
        tail = ' | '.join(proc.stderr.strip().splitlines()[-3:])
        return None, 'failed (exit status %d): %s' % (proc.returncode, tail)
    return json.loads(lines[-1]), None


def learnable_data(root, image_size=16, train_examples=4000, validation_examples=500,
                   num_classes=10):
    """The learnable synthetic image set (`tfhp.data.synthetic`) under root, made on first use.

    Returns:
      The data directory.
    """
    directory = os.path.join(root, 'shapes%d_%d_%d_%d' % (image_size, num_classes,
                                                          train_examples, validation_examples))
    if not os.path.exists(os.path.join(directory, info_lib.INFO_FILE)):
        synthetic.generate(directory, num_classes=num_classes, image_size=image_size,
                           train_examples=train_examples,
                           validation_examples=validation_examples, train_shards=4,
                           validation_shards=1)
    return directory


def grouped(records, key):
    """{key(record): [its records]}, the groups and their members in the records' order."""
    groups = {}
    for record in records:
        groups.setdefault(key(record), []).append(record)
    return groups


def check_choices(flag, values, choices):
    """Raises app.UsageError naming --flag unless every value is one of `choices`."""
    unknown = sorted(set(values) - set(choices))
    if unknown:
        raise app.UsageError('--%s: unknown %s; choose from %s' % (
            flag, ', '.join(unknown), ', '.join(choices)))


def _cell(record, column):
    _, key, fmt = column[:3]
    value = record.get(key)
    if value is None:
        return '-'
    scale = column[3] if len(column) > 3 else 1
    if stats.is_summary(value):
        differs = record.get('vs_reference', {}).get(key) in ('lower', 'higher')
        return stats.cell(value, fmt or '%g', mark=differs, scale=scale)
    if scale != 1:
        value *= scale
    return fmt % value if fmt else str(value)


def print_table(records, columns, reference=None):
    """Prints records as a table; summaries as 'median [min-max]', '*' where marked.

    Args:
      records: dicts.
      columns: (header, key, format) triples, or (header, key, format, scale) to print
        value * scale (e.g. 1e-9 for GB/s of bytes/sec); a missing or None value prints '-',
        format None prints str(value); a summary (`stats.summarise`) prints `stats.cell`,
        with '*' where the record's 'vs_reference' (`stats.mark`) says it differs.
      reference: what the marks compare with, for the legend (e.g. "the first row").
    """
    rows = [[column[0] for column in columns]]
    rows += [[_cell(r, column) for column in columns] for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    for row in rows:
        print('  '.join(cell.rjust(w) if i else cell.ljust(w)
                        for i, (cell, w) in enumerate(zip(row, widths))))
    repeats = {r[c[1]]['n'] for r in records for c in columns if stats.is_summary(r.get(c[1]))}
    if repeats - {1}:
        missing = any(v is None for r in records for c in columns
                      if stats.is_summary(r.get(c[1])) for v in r[c[1]]['values'])
        print('cells: median [min\u2013max] over %s repeats%s' % (
            '/'.join(str(n) for n in sorted(repeats)),
            '; %s: not reached within the budget' % stats.NOT_REACHED if missing else ''))
        if reference:
            print('*: range apart from that of %s: every repeat above it, or every one below '
                  '(chance <= %.2f were there no difference; experiments/stats.py)'
                  % (reference, stats.ALPHA))


def write_records(records, result_file=None):
    """Appends each record as one JSON line to result_file, and says how many; without one,
    prints them (a record holds every repeat's run: pages of text beside the table)."""
    for record in records:
        if result_file:
            timing.append_json(result_file, record)
        else:
            print(json.dumps(record, sort_keys=True))
    if result_file and records:
        print('%d record(s) appended to %s' % (len(records), result_file))

"""What the experiment scripts share: runs in subprocesses, the learnable data set, tables, JSON.

  run_tfhp      one `python -m tfhp` configuration in a subprocess (`tfhp.sweep.run_tfhp`)
  run_cluster   one multi-process job on this machine (`tfhp.launch`), every task's result back
  run_child     a script's own configuration in a child process, its JSON record back
  learnable_data  the small learnable image data set the convergence studies train on
  print_table, write_records   the readable table and the JSON lines of a study
  check_choices  a list flag's values checked against the script's choices
"""
import collections
import io
import json
import os
import subprocess
import sys

from absl import app

from tfhp import launch
from tfhp import sweep
from tfhp import timing
from tfhp.data import info as info_lib
from tfhp.data import synthetic

run_tfhp = sweep.run_tfhp

# A job's outcome: the launcher's summary, {(job, index): result dict} of every worker (and
# controller) that wrote one, and the end of the job's output when it failed (else None).
ClusterRun = collections.namedtuple('ClusterRun', ['summary', 'results', 'error'])


def run_cluster(num_ps, num_workers, tfhp_args, timeout_s=600.0, link_bandwidth=None,
                ps_link_bandwidth=None):
    """Runs one job, every task its own process (`tfhp.launch.launch_job`), on loopback or on
    emulated links of the given rates.

    Returns:
      A `ClusterRun`.
    """
    output = io.StringIO()
    summary, results = launch.launch_job(num_ps, num_workers, list(tfhp_args),
                                         timeout_s=timeout_s, link_bandwidth=link_bandwidth,
                                         ps_link_bandwidth=ps_link_bandwidth, out=output)
    lines = output.getvalue().splitlines()
    status = summary['status']
    error = None if status == 0 else ' | '.join(lines[-6:]) or 'exit status %d' % status
    return ClusterRun(summary, results, error)


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


def check_choices(flag, values, choices):
    """Raises app.UsageError naming --flag unless every value is one of `choices`."""
    unknown = sorted(set(values) - set(choices))
    if unknown:
        raise app.UsageError('--%s: unknown %s; choose from %s' % (
            flag, ', '.join(unknown), ', '.join(choices)))


def _cell(value, fmt):
    if value is None:
        return '-'
    return fmt % value if fmt else str(value)


def print_table(records, columns):
    """Prints records as a table.

    Args:
      records: dicts.
      columns: (header, key, format) triples; a missing or None value prints '-', format None
        prints str(value).
    """
    rows = [[header for header, _, _ in columns]]
    rows += [[_cell(r.get(key), fmt) for _, key, fmt in columns] for r in records]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    for row in rows:
        print('  '.join(cell.rjust(w) if i else cell.ljust(w)
                        for i, (cell, w) in enumerate(zip(row, widths))))


def write_records(records, result_file=None):
    """Prints each record as one JSON line, and appends it to result_file if given."""
    for record in records:
        print(json.dumps(record, sort_keys=True))
        if result_file:
            timing.append_json(result_file, record)

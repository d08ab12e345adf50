"""`python -m tfhp.sweep [--grid=flag=v1,v2 ...] -- <benchmark flags>`: the best setting here.

The best setting differs by platform and model, so measure it: every point of the grid (the
product of the --grid value lists; without --grid, DEFAULT_POINTS: each variable update and
all-reduce worth trying on this device kind) runs as its own `python -m tfhp` process with the
benchmark flags plus the point's flags. An axis named `env:NAME` sets the environment variable
NAME of the process instead of a flag: settings TensorFlow reads once at start-up, such as
`env:TF_ENABLE_ONEDNN_OPTS=0,1` (oneDNN's kernels and graph rewrites on or off). With
--repeats=N the grid runs N times in rounds (so a drift of the machine hits every point alike)
and points are ranked by their median images/sec. A point tfhp refuses (exit status 2: a flag
combination that cannot work here, e.g. NCCL on a CPU) or that fails is listed with its reason.
The last line is the best point's whole command, environment first.

`run_tfhp` (one configuration in a subprocess, its JSON result back) is also what the
experiment scripts use. Options are parsed with argparse, not absl, as in `tfhp.launch`, and
this module imports no TensorFlow: it starts processes only.
"""
import argparse
import collections
import itertools
import json
import os
import shlex
import subprocess
import sys
import tempfile

from tfhp import timing
from tfhp.launcher import forked_task

# A run's outcome: the flags it ran with, its result dict (None if it failed) and, when it
# failed, why (tfhp's own error line, or the end of its output).
Outcome = collections.namedtuple('Outcome', ['args', 'result', 'error'])

# A grid axis that sets an environment variable instead of a flag: env:NAME=v1,v2.
ENV_AXIS = 'env:'

# Without --grid: the in-graph settings worth comparing on one machine (tf_cnn_benchmarks'
# usual candidates). NCCL points are only tried with --device=gpu.
DEFAULT_POINTS = (
    {'variable_update': 'parameter_server'},
    {'variable_update': 'parameter_server', 'staged_vars': 'true'},
    {'variable_update': 'replicated'},
    {'variable_update': 'replicated', 'all_reduce_spec': 'pscpu'},
    {'variable_update': 'replicated', 'all_reduce_spec': 'xring'},
    {'variable_update': 'replicated', 'all_reduce_spec': 'collective'},
    {'variable_update': 'replicated', 'all_reduce_spec': 'nccl'},
    {'variable_update': 'replicated', 'all_reduce_spec': 'xring', 'gradient_repacking': '2'},
)


def _last_lines(text, count=3):
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return ' | '.join(lines[-count:])


def run_tfhp(args, timeout_s=600.0, env=None):
    """Runs `python -m tfhp <args>` and reads the result it appends to a result file.

    Where the environment names a forkserver (`tfhp.launcher.forked_task.ENVIRONMENT_VARIABLE`)
    the run is a fork of it, as a launcher's tasks are, and skips TensorFlow's import; where
    the fork cannot take the run's environment (`forked_task.STARTUP_VARIABLES`), it is
    started the usual way.

    Args:
      args: tfhp flags (the function adds --result_file).
      timeout_s: bound on the run; it is killed after it.
      env: environment variables to set for the run ({name: value}), beside this process's.
    Returns:
      An `Outcome`; `result` is the last JSON line written, or None with `error` set.
    """
    args = list(args)
    with tempfile.TemporaryDirectory(prefix='tfhp_run_') as directory:
        result_file = os.path.join(directory, 'result.jsonl')
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2', **(env or {}))
        # A file, not a pipe: a run that fills a pipe nobody reads would stall until killed.
        with open(os.path.join(directory, 'output'), 'w+') as output:
            proc = forked_task.start([sys.executable, '-m', 'tfhp'] + args +
                                     ['--result_file=' + result_file], env, output)
            try:
                returncode = proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                return Outcome(args, None, 'timed out after %g s' % timeout_s)
            output.seek(0)
            text = output.read()
        lines = []
        if os.path.exists(result_file):
            with open(result_file) as f:
                lines = f.read().splitlines()
    if returncode == 0 and lines:
        return Outcome(args, json.loads(lines[-1]), None)
    errors = [line for line in text.splitlines() if ': error: ' in line]
    if returncode == 2 and errors:
        return Outcome(args, None, 'refused: ' + errors[-1].split(': error: ', 1)[1])
    return Outcome(args, None, 'failed (exit status %d): %s' % (returncode, _last_lines(text)))


def grid_points(grids):
    """The product of `flag=v1,v2,...` specs, as a list of {flag: value} (first flag slowest).

    Raises:
      ValueError: a spec is not flag=values, or names a flag twice.
    """
    axes = []
    for spec in grids:
        name, sep, values = spec.partition('=')
        name = name.strip().lstrip('-')
        if not sep or not name or not values:
            raise ValueError('--grid %r must be flag=value1,value2,...' % spec)
        if name in [n for n, _ in axes]:
            raise ValueError('--grid names --%s twice' % name)
        axes.append((name, values.split(',')))
    return [dict(zip([n for n, _ in axes], combo))
            for combo in itertools.product(*[v for _, v in axes])]


def point_flags(point):
    """['--flag=value', ...] of a grid point (its env: axes are not flags)."""
    return ['--%s=%s' % item for item in point.items() if not item[0].startswith(ENV_AXIS)]


def point_env(point):
    """{NAME: value} of a grid point's env:NAME axes."""
    return {name[len(ENV_AXIS):]: value for name, value in point.items()
            if name.startswith(ENV_AXIS)}


def _env_words(point):
    return ['%s=%s' % (name, shlex.quote(value)) for name, value in point_env(point).items()]


def describe(point):
    """A point as a reader would type it: NAME=value ... --flag=value ..."""
    return ' '.join(_env_words(point) + point_flags(point))


def rank(outcomes):
    """(ranked successful outcomes, best first by images/sec; outcomes that failed)."""
    done = [o for o in outcomes if o.result is not None]
    return (sorted(done, key=lambda o: -o.result['images_per_sec']),
            [o for o in outcomes if o.result is None])


def median_outcome(runs):
    """One outcome for a point's repeated runs: the run of median images/sec (the lower of the
    two middle ones for an even count); the first failure if any run failed."""
    failed = [o for o in runs if o.result is None]
    if failed:
        return failed[0]
    ordered = sorted(runs, key=lambda o: o.result['images_per_sec'])
    return ordered[(len(ordered) - 1) // 2]


def _parse(argv):
    parser = argparse.ArgumentParser(
        prog='tfhp-sweep', description='Rank settings of one benchmark by images/sec.',
        usage='%(prog)s [--grid flag=v1,v2 ...] [options] -- <benchmark flags>')
    parser.add_argument('--grid', action='append', default=[],
                        help='a flag and the values to try (repeat for a product); default: '
                        'the variable updates and all-reduce algorithms')
    parser.add_argument('--repeats', type=int, default=1,
                        help='runs of each point, in rounds over the grid; ranked by the median')
    parser.add_argument('--timeout_s', type=float, default=600.0, help='bound on each run')
    parser.add_argument('--result_file', default=None,
                        help='append one JSON line per point and one for the ranking here')
    split = argv.index('--') if '--' in argv else len(argv)
    args = parser.parse_args(argv[:split])
    try:
        points = grid_points(args.grid) if args.grid else None
    except ValueError as e:
        parser.error(str(e))
    if args.repeats < 1:
        parser.error('--repeats must be at least 1, got %d' % args.repeats)
    return args, points, argv[split + 1:]


def _default_points(benchmark_args):
    on_gpu = '--device=gpu' in benchmark_args
    return [p for p in DEFAULT_POINTS if on_gpu or p.get('all_reduce_spec') != 'nccl']


def main(argv=None):
    """Runs the sweep; returns 0 if at least one point ran, 1 if none did, 2 on bad usage."""
    args, points, benchmark_args = _parse(sys.argv[1:] if argv is None else argv)
    points = points or _default_points(benchmark_args)
    runs = [[] for _ in points]
    for r in range(args.repeats):
        for i, point in enumerate(points):
            if runs[i] and runs[i][0].result is None:
                continue  # refused or failed once: the same again would waste the round
            outcome = run_tfhp(benchmark_args + point_flags(point), args.timeout_s,
                               point_env(point))
            print('[%d/%d%s] %s: %s' % (
                i + 1, len(points), ', round %d' % (r + 1) if args.repeats > 1 else '',
                describe(point), outcome.error or '%.1f images/sec'
                % outcome.result['images_per_sec']), flush=True)
            runs[i].append(outcome._replace(args=point))
            if args.result_file:
                timing.append_json(args.result_file, {'point': point, 'round': r,
                                                      'error': outcome.error,
                                                      'result': outcome.result})
    ranked, failed = rank([median_outcome(point_runs) for point_runs in runs])
    print('\n%4s %12s %10s  %s' % ('rank', 'images/sec', 'step ms', 'setting'))
    for i, o in enumerate(ranked):
        print('%4d %12.1f %10.2f  %s' % (i + 1, o.result['images_per_sec'],
                                         o.result['step_time_ms']['p50'], describe(o.args)))
    for o in failed:
        print('%4s %12s %10s  %s: %s' % ('-', '-', '-', describe(o.args), o.error))
    if not ranked:
        print('no point ran')
        return 1
    best = benchmark_args + point_flags(ranked[0].args)
    print('\nbest: %s' % ' '.join(_env_words(ranked[0].args) + ['python', '-m', 'tfhp'] +
                                   [shlex.quote(a) for a in best]))
    if args.result_file:
        timing.append_json(args.result_file, {
            'best_flags': best, 'best_env': point_env(ranked[0].args),
            'repeats': args.repeats, 'ranking': [{'point': o.args,
                                             'images_per_sec': o.result['images_per_sec']}
                                            for o in ranked]})
    return 0


def run_main():
    """Console-script entry point (`tfhp-sweep`)."""
    sys.exit(main())


if __name__ == '__main__':
    run_main()

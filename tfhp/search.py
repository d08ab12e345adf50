"""`python -m tfhp.search --grid flag=v1,v2 ... [--repeats N] [--parallel P] -- <tfhp flags>`:
a hyperparameter search as parallel clients of one set of ps tasks, ranked on validation.

It starts --num_ps ps tasks that serve clients (`--serve_clients`, bounded by --linger_s), then
runs every point of the grid (`tfhp.sweep.grid_points`), --repeats times in rounds (round r with
the tfhp flags' --tf_random_seed + r: other initial weights and data order), at most --parallel
at once, each as its own client process (a fork where a forkserver is named, as the ps tasks
are: `tfhp.launcher.forked_task`): a worker of its own (`tfhp.cluster.container_client`)
with the point's flags and its placement (its slot's address, the ps tasks) on its command
line, its graph in a resource container of its own (so clients never share a variable, whatever
they name them), trained, evaluated on the validation set (the tfhp flags must ask for an
evaluation: --eval_during_training_every_n_steps) and its container reset as it ends. A client
that fails (killed, timed out) may end before its reset: the search then resets its container
from the client's place (`python -m tfhp.reconnect --reset_only`). After each client it records
every ps task's resident memory (VmRSS), so the servers' memory over the search shows whether
the resets free what clients left; --no_reset (clients with --container_reset=false, failed
ones left too) shows what they would hold without them.
Points are ranked by their median last top-1 accuracy, with the spread over repeats. At the end
the ps tasks are released (`python -m tfhp.reconnect --release_only`) and exit.
The servers, the clients and the reconnecting tool all run in one network namespace of their
own where this process may create one (`tfhp.launcher.private_net`): a ps task that serves
clients for --timeout_s serves no one else.

Imports no TensorFlow: it starts processes only, as `tfhp.sweep` and `tfhp.launch` do.
"""
import argparse
import concurrent.futures
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from tfhp import config as config_lib
from tfhp import sweep
from tfhp import timing
from tfhp.launcher import forked_task
from tfhp.launcher import plan
from tfhp.launcher import private_net


def rss_mb(pid):
    """Resident memory of process `pid` in MiB (VmRSS of /proc/<pid>/status), None if gone."""
    try:
        with open('/proc/%d/status' % pid) as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        return None
    return None


def accuracy(result):
    """The last validation top-1 accuracy in a client's result, or None without one."""
    evaluations = (result or {}).get('evaluations') or []
    return evaluations[-1]['top_1_accuracy'] if evaluations else None


def rank(points, accuracies):
    """Rows best first: {'point', 'median', 'min', 'max', 'runs'} of every point with at least
    one accuracy (accuracies[i]: the point's values over its repeats)."""
    rows = [{'point': p, 'median': statistics.median(a), 'min': min(a), 'max': max(a),
             'runs': len(a)} for p, a in zip(points, accuracies) if a]
    return sorted(rows, key=lambda r: -r['median'])


def _parse(argv):
    parser = argparse.ArgumentParser(
        prog='tfhp-search', description='A hyperparameter search as parallel clients of one '
        'set of ps tasks, each in its own resource container, ranked on validation.',
        usage='%(prog)s --grid flag=v1,v2 [...] [options] -- <tfhp flags>')
    parser.add_argument('--grid', action='append', default=[], required=True,
                        help='a flag and the values to try (repeat for a product)')
    parser.add_argument('--repeats', type=int, default=1, help='runs of each point, in rounds')
    parser.add_argument('--parallel', type=int, default=2, help='clients running at once')
    parser.add_argument('--num_ps', type=int, default=1, help='ps tasks (servers)')
    parser.add_argument('--timeout_s', type=float, default=1800.0,
                        help='bound on the whole search (the servers\' --linger_s)')
    parser.add_argument('--no_reset', dest='reset', action='store_false',
                        help='leave every client\'s container on the ps tasks (to measure '
                        'what the resets save)')
    parser.add_argument('--result_file', default=None,
                        help='append one JSON line per client and one for the search here')
    split = argv.index('--') if '--' in argv else len(argv)
    args = parser.parse_args(argv[:split])
    try:
        points = sweep.grid_points(args.grid)
    except ValueError as e:
        parser.error(str(e))
    for name in ('repeats', 'parallel', 'num_ps'):
        if getattr(args, name) < 1:
            parser.error('--%s must be at least 1, got %d' % (name, getattr(args, name)))
    return args, points, argv[split + 1:]


class _Servers:
    """The ps tasks of a search: started, measured, released; output in files of `directory`."""

    def __init__(self, commands, directory, env, log):
        self.procs, self.log = {}, log
        for (job, index), argv in commands.items():
            if job == 'ps':
                with open(os.path.join(directory, 'ps_%d.log' % index), 'w') as out:
                    self.procs[index] = forked_task.start(argv, env, out)

    def rss_mb(self):
        return [rss_mb(p.pid) for _, p in sorted(self.procs.items())]

    def release(self, argv, env, bound_s):
        """Releases the ps tasks and waits for them (killed past bound_s); their exit codes."""
        told = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=bound_s)
        if told.returncode:
            self.log('could not release the ps tasks: %s' % told.stderr.strip()[-500:])
        codes = []
        for proc in self.procs.values():
            forked_task.wait_or_kill(proc, bound_s)
            codes.append(proc.returncode)
        return codes


def search(points, tfhp_args, repeats=1, parallel=2, num_ps=1, timeout_s=1800.0, log=print,
           result_file=None, reset=True):
    """Runs the search (see the module doc) and returns its record: 'ranking' (`rank`),
    'runs' (point, round, accuracy, error, wall seconds, each in order of ending), 'ps_rss_mb'
    (every ps task's MiB after each run ended, and before the first), 'ps_exit_codes'.
    reset=False leaves every client's container on the ps tasks (--no_reset).

    Raises:
      ValueError: tfhp_args set a flag the search sets for each task, or a --tf_random_seed
        that is not a whole number.
    """
    runs = [(r, i) for r in range(repeats) for i in range(len(points))]
    peer_timeout_s = plan.task_bounds(tfhp_args)[0]
    own = ['--serve_clients', '--linger_s=%g' % timeout_s]
    seed = int(plan.flag_value(tfhp_args, 'tf_random_seed', config_lib.RunConfig.tf_random_seed))
    env = plan.task_environment(os.environ)
    with tempfile.TemporaryDirectory(prefix='tfhp_search_') as directory, \
            private_net.isolated(plan.task_commands(num_ps, len(runs), tfhp_args, directory),
                                 log) as commands:
        servers = _Servers({t: argv + own for t, argv in commands.items()}, directory, env,
                           log)
        record = {'points': points, 'repeats': repeats, 'parallel': parallel, 'num_ps': num_ps,
                  'reset': reset, 'tfhp_args': list(tfhp_args), 'runs': [], 'ps_rss_mb': []}
        lock = threading.Lock()
        deadline = time.monotonic() + timeout_s

        def client(slot):
            r, i = runs[slot]
            argv = commands[('worker', slot)] + sweep.point_flags(points[i]) + [
                '--container=point%d-round%d' % (i, r), '--tf_random_seed=%d' % (seed + r)]
            if not reset:
                argv.append('--container_reset=false')
            start = time.monotonic()
            # A fork where a forkserver is named, as the ps tasks are: a client is mostly its
            # start. Its output goes to a file, not a pipe nobody reads while it runs.
            with open(os.path.join(directory, 'worker_%d.log' % slot), 'w+') as output:
                proc = forked_task.start(argv, env, output)
                timed_out = not forked_task.wait_or_kill(proc, max(1.0, deadline - start))
                output.seek(0)
                text = output.read()
            if timed_out:
                error = 'timed out (--timeout_s)'
            elif proc.returncode:
                lines = [line for line in text.splitlines()
                         if 'Error' in line or 'error:' in line] or text.strip().splitlines()
                error = 'exit status %d: %s' % (proc.returncode, ' | '.join(lines[-3:]) if lines
                                                else 'no output')
            else:
                error = None
            if error and reset:
                reset_client_container(argv, env, peer_timeout_s + plan.MARGIN_S, log)
            result = client_result(directory, slot)
            run = {'point': points[i], 'round': r, 'accuracy': accuracy(result),
                   'error': error, 'wall_s': time.monotonic() - start}
            with lock:
                record['runs'].append(run)
                record['ps_rss_mb'].append(servers.rss_mb())
                if run['accuracy'] is not None:
                    outcome = 'top-1 %.4f' % run['accuracy']
                else:
                    outcome = error or 'no evaluation (add --eval_during_training_every_n_steps)'
                log('[%d/%d] %s round %d: %s (ps MiB %s)' % (
                    len(record['runs']), len(runs), sweep.describe(points[i]), r + 1, outcome,
                    ' '.join('%.0f' % m for m in record['ps_rss_mb'][-1] if m)))
                if result_file:
                    timing.append_json(result_file, dict(run, result=result))

        try:
            record['ps_rss_mb'].append(servers.rss_mb())
            with concurrent.futures.ThreadPoolExecutor(parallel) as pool:
                list(pool.map(client, range(len(runs))))
        finally:
            # ps task 0's own flags, read by the release tool instead of tfhp.
            record['ps_exit_codes'] = servers.release(
                _reconnect(commands[('ps', 0)] + own) + ['--release_only'], env,
                peer_timeout_s + plan.MARGIN_S)
    accuracies = [[run['accuracy'] for run in record['runs']
                   if run['point'] == p and run['accuracy'] is not None] for p in points]
    record['ranking'] = rank(points, accuracies)
    return record


def _reconnect(argv):
    """A task's command line, run by the reconnecting tool instead of tfhp (its flags read
    as that task's)."""
    argv = list(argv)
    argv[argv.index('tfhp')] = 'tfhp.reconnect'
    return argv


def reset_client_container(client_argv, env, bound_s, log):
    """Resets the container of a client that ended (`client_argv`: its command line) from its
    place: its flags and its address, free once it is gone. Returns whether it was reset; logs
    what went wrong instead of raising (a search goes on past a container it could not clear).
    """
    try:
        told = subprocess.run(_reconnect(client_argv) + ['--reset_only'], capture_output=True,
                              text=True, env=env, timeout=bound_s)
    except subprocess.TimeoutExpired:
        log('could not reset container %s of a failed client (timed out)'
            % plan.flag_value(client_argv, 'container'))
        return False
    if told.returncode:
        log('could not reset container %s of a failed client: %s' % (
            plan.flag_value(client_argv, 'container'), told.stderr.strip()[-500:]))
    return told.returncode == 0


def client_result(directory, slot):
    """The result a client wrote to its result file in `directory`, or None."""
    path = os.path.join(directory, 'worker_%d.jsonl' % slot)
    if not os.path.exists(path):
        return None
    with open(path) as f:
        lines = f.read().splitlines()
    return json.loads(lines[-1]) if lines else None


def main(argv=None):
    """Runs the search; returns 0 if a point was ranked, 1 if none was, 2 on bad usage."""
    args, points, tfhp_args = _parse(sys.argv[1:] if argv is None else argv)
    try:
        record = search(points, tfhp_args, args.repeats, args.parallel, args.num_ps,
                        args.timeout_s, log=lambda line: print(line, flush=True),
                        result_file=args.result_file, reset=args.reset)
    except ValueError as e:
        print('tfhp-search: error: %s' % e, file=sys.stderr)
        return 2
    print('\n%4s %8s %17s %4s  %s' % ('rank', 'top-1', '[min-max]', 'runs', 'setting'))
    for n, row in enumerate(record['ranking']):
        print('%4d %8.4f [%.4f-%.4f] %4d  %s' % (n + 1, row['median'], row['min'], row['max'],
                                                 row['runs'], sweep.describe(row['point'])))
    rss = [max(m for m in after if m) for after in record['ps_rss_mb'] if any(after)]
    if rss:
        print('ps memory (largest task, MiB): %s' % ' '.join('%.0f' % m for m in rss))
    if args.result_file:
        timing.append_json(args.result_file, {k: v for k, v in record.items() if k != 'runs'})
    return 0 if record['ranking'] else 1


def run_main():
    """Console-script entry point (`tfhp-search`)."""
    sys.exit(main())


if __name__ == '__main__':
    run_main()

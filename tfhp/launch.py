"""`python -m tfhp.launch --num_ps 2 --num_workers 4 -- <tfhp flags>`: a whole job, one machine.

Starts every task as its own process (`python -m tfhp --job_name=... <tfhp flags>`) on free
127.0.0.1 ports, prefixes each line a task prints with its name ("[worker 1] ..."), and ends
every task when the job is done or a task fails (then it exits with status 1). Serving tasks (ps)
exit by themselves once the workers are done; the launcher only waits for them, with a bound
derived from their own timeouts. SIGTERM or SIGINT to the launcher stops the job gracefully:
every task gets SIGTERM (the job stops at a common step and the chief writes its checkpoint),
the launcher says which tasks it stopped and exits with 128 + the signal's number; a second
signal kills every task at once.
It prints, and appends as one JSON line to --result_file, each task's time from launch to its
first step, each worker's images/sec and dropped (late) gradients, and the cluster's images/sec:
every worker's images over the one wall-clock interval in which all of them were timing steps.

Its options are parsed with argparse, not absl, so that its flags and tfhp's (`tfhp.cli`) never
share a registry: both modules can be imported in one process (tests do).
Imports no TensorFlow: it starts and watches processes only.
"""
import argparse
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from tfhp import config as config_lib
from tfhp import timing
from tfhp.cluster import figures
from tfhp.cluster import links

# Slack on the tasks' own bounds for starting and ending a process (importing TensorFlow).
_MARGIN_S = 10.0
# Flags the launcher sets for every task; a job's tfhp flags must not set them.
_OWN_FLAGS = ('job_name', 'task_index', 'ps_hosts', 'worker_hosts', 'controller_host',
              'result_file')


def free_ports(count):
    """`count` distinct TCP ports free on 127.0.0.1 (bound together, then released)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(('127.0.0.1', 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def task_names(num_ps, num_workers, controller=False):
    """(job, index) of every task of a job, ps tasks first."""
    return ([('ps', i) for i in range(num_ps)] + [('worker', i) for i in range(num_workers)] +
            ([('controller', 0)] if controller else []))


def task_commands(num_ps, num_workers, tfhp_args, result_dir, controller=False, hosts=None):
    """{(job, index): argv} of every task of a job, on free loopback ports by default.

    Args:
      num_ps, num_workers: task counts.
      tfhp_args: tfhp flags every task gets (the benchmark's configuration).
      result_dir: each worker (and the controller) writes its result to <job>_<index>.jsonl here.
      controller: also start a controller task (the in-graph client).
      hosts: {job: [host:port, ...]} to use instead (an emulated network's addresses).
    Returns:
      An ordered dict-like {(job, index): argv list}; ps tasks first.
    Raises:
      ValueError: tfhp_args sets a flag the launcher sets.
    """
    for arg in tfhp_args:
        name = arg.lstrip('-').split('=', 1)[0]
        if arg.startswith('-') and name in _OWN_FLAGS:
            raise ValueError('--%s is set by the launcher for each task; drop it '
                             '(use the launcher\'s --result_file for the job\'s result)' % name)
    tasks = task_names(num_ps, num_workers, controller)
    if hosts is None:
        ports = iter(free_ports(len(tasks)))
        hosts = {}
        for job, _ in tasks:
            hosts.setdefault(job, []).append('127.0.0.1:%d' % next(ports))
    common = ['--worker_hosts=' + ','.join(hosts['worker'])]
    if num_ps:
        common.append('--ps_hosts=' + ','.join(hosts['ps']))
    if controller:
        common.append('--controller_host=' + hosts['controller'][0])
    commands = {}
    for job, index in tasks:
        argv = [sys.executable, '-m', 'tfhp'] + list(tfhp_args) + common + [
            '--job_name=' + job, '--task_index=%d' % index]
        if job != 'ps':
            argv.append('--result_file=' + os.path.join(result_dir, '%s_%d.jsonl' % (job, index)))
        commands[(job, index)] = argv
    return commands


def task_bounds(tfhp_args):
    """(peer_timeout_s, step_timeout_s) the tasks of a job run with: their flags or defaults.

    The launcher's own waits for its tasks derive from them, so it never blames a task for
    keeping the bounds it was given.
    """
    defaults = config_lib.ClusterConfig()
    values = {'peer_timeout_s': defaults.peer_timeout_s,
              'step_timeout_s': defaults.step_timeout_s}
    for i, arg in enumerate(tfhp_args):
        name, _, value = arg.lstrip('-').partition('=')
        if arg.startswith('--') and name in values:
            text = value or (tfhp_args[i + 1] if i + 1 < len(tfhp_args) else '')
            try:
                values[name] = float(text)
            except ValueError:
                pass  # tfhp itself refuses it, naming the flag
    return values['peer_timeout_s'], values['step_timeout_s']


def _pump(name, stream, out, lock):
    for line in stream:
        with lock:
            out.write('[%s] %s' % (name, line))
            out.flush()


def describe_status(code):
    """A task's exit status in words: 'exit status 1', 'stopped by SIGTERM (143)', ..."""
    if code is None:
        return 'still running'
    if code < 0:
        return 'killed by %s' % signal.Signals(-code).name
    if code > 128 and code - 128 in signal.valid_signals():
        return 'stopped by %s (exit status %d)' % (signal.Signals(code - 128).name, code)
    return 'exit status %d' % code


def _end_tasks(processes, grace_s):
    """SIGTERM every running task (a graceful stop), then SIGKILL those still running after
    grace_s; returns the tasks that had to be killed."""
    for proc in processes.values():
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    killed = []
    for task, proc in processes.items():
        try:
            proc.wait(max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            killed.append(task)
    return killed


class _Signals:
    """SIGTERM and SIGINT to the launcher, noted for its watch loop (which runs in Python, so
    the handler runs at once); a second one kills every task at once."""

    def __init__(self):
        self.signum = None
        self._processes = {}
        self._previous = {}

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for signum in (signal.SIGTERM, signal.SIGINT):
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc_info):
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def watch(self, processes):
        self._processes = processes

    def _handle(self, signum, frame):
        del frame
        if self.signum is None:
            self.signum = signum
            return
        for proc in self._processes.values():
            if proc.poll() is None:
                proc.kill()


def run_job(commands, timeout_s=600.0, keep_going=False, out=None, bounds=None):
    """Starts every task, relays its output, and waits for the job to end.

    Every wait is bounded by the tasks' own timeouts (`task_bounds`): serving tasks get
    --peer_timeout_s (+ a margin) to exit after the last worker, since that is how long they
    wait for a worker that vanished; a stop or a failed job's end gets one step and two peer
    timeouts before its tasks are killed.

    Args:
      commands: {(job, index): argv} from `task_commands`.
      timeout_s: bound on the whole job.
      keep_going: a failed non-chief worker does not end the job (asynchronous training
        goes on without it); the launcher still reports failure at the end.
      out: where task output goes (default: sys.stdout).
      bounds: (peer_timeout_s, step_timeout_s) of the tasks; default: tfhp's defaults.
    Returns:
      (status, launch_times, return_codes): status 0 if every task exited 0, 1 if one did
      not, 128 + N if the launcher got signal N (it then stopped every task).
    """
    out = out or sys.stdout
    lock = threading.Lock()
    say = functools.partial(_say, out, lock)
    peer_timeout_s, step_timeout_s = bounds or task_bounds([])
    stop_s = step_timeout_s + 2 * peer_timeout_s + _MARGIN_S
    env = dict(os.environ, PYTHONUNBUFFERED='1')
    processes, launch_times, pumps = {}, {}, []
    with _Signals() as signals:
        signals.watch(processes)
        try:
            for task, argv in commands.items():
                launch_times[task] = time.time()
                proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                        text=True, env=env)
                processes[task] = proc
                say('started %s: pid %d' % (figures.task_name(task), proc.pid))
                pump = threading.Thread(target=_pump, args=(figures.task_name(task), proc.stdout, out, lock),
                                        daemon=True)
                pump.start()
                pumps.append(pump)
            status = _watch(processes, timeout_s, peer_timeout_s + _MARGIN_S, keep_going, say,
                            signals)
        finally:
            running = [t for t, p in processes.items() if p.poll() is None]
            killed = _end_tasks(processes, stop_s if signals.signum else peer_timeout_s)
            if signals.signum:
                status = 128 + signals.signum
                say('%s: stopped %s' % (signal.Signals(signals.signum).name, ', '.join(
                    '%s (%s%s)' % (figures.task_name(t), describe_status(processes[t].returncode),
                                   ', after %g s' % stop_s if t in killed else '')
                    for t in running) or 'no running task'))
            for pump in pumps:
                pump.join(timeout=5)
    return status, launch_times, {t: p.returncode for t, p in processes.items()}


def _say(out, lock, line):
    with lock:
        out.write('[launch] %s\n' % line)
        out.flush()


def _watch(processes, timeout_s, serve_grace_s, keep_going, say, signals):
    deadline = time.monotonic() + timeout_s
    clients = [t for t in processes if t[0] != 'ps']
    essential = [t for t in processes if t[0] != 'worker' or t[1] == 0]
    clients_done_at = None
    named = set()
    while True:
        if signals.signum:
            return 128 + signals.signum
        codes = {t: p.poll() for t, p in processes.items()}
        failed = [t for t, c in codes.items() if c not in (None, 0)]
        for task in failed:
            if task not in named:
                named.add(task)
                if keep_going and task not in essential:
                    say('%s ended (%s); the job goes on without it (--keep_going)'
                        % (figures.task_name(task), describe_status(codes[task])))
        if failed and (not keep_going or any(t in essential for t in failed)):
            task = next(t for t in failed if not keep_going or t in essential)
            say('%s failed (%s); ending the job' % (figures.task_name(task), describe_status(codes[task])))
            return 1
        if all(codes[t] is not None for t in clients):
            clients_done_at = clients_done_at or time.monotonic()
            if all(c is not None for c in codes.values()):
                return 1 if failed else 0
            if time.monotonic() - clients_done_at > serve_grace_s:
                say('%s did not exit within %g s of the last worker (their --peer_timeout_s + '
                    '%g s); ending them' % (', '.join(figures.task_name(t) for t, c in codes.items()
                                                       if c is None), serve_grace_s, _MARGIN_S))
                return 1
        if time.monotonic() > deadline:
            say('the job did not end within --timeout_s=%g; ending it' % timeout_s)
            return 1
        time.sleep(0.05)


def read_results(result_dir, tasks):
    """{task: its last result line} of the tasks (of `task_commands`) that wrote one."""
    results = {}
    for job, index in tasks:
        path = os.path.join(result_dir, '%s_%d.jsonl' % (job, index))
        if os.path.exists(path):
            with open(path) as f:
                lines = f.read().splitlines()
            if lines:
                results[(job, index)] = json.loads(lines[-1])
    return results


def _parse(argv):
    parser = argparse.ArgumentParser(
        prog='tfhp-launch', description='Run a tfhp job with every task on this machine.',
        usage='%(prog)s [--num_ps N] [--num_workers N] [options] -- <tfhp flags>')
    parser.add_argument('--num_ps', type=int, default=1, help='ps tasks (default 1)')
    parser.add_argument('--num_workers', type=int, default=2, help='worker tasks (default 2)')
    parser.add_argument('--controller', action='store_true',
                        help='also start a controller task (the client of --graph_mode=in_graph)')
    parser.add_argument('--keep_going', action='store_true',
                        help='a failed non-chief worker does not end the job')
    parser.add_argument('--timeout_s', type=float, default=600.0, help='bound on the job')
    parser.add_argument('--result_file', default=None,
                        help='append the job\'s JSON result line here')
    parser.add_argument('--link_bandwidth', default=None,
                        help='give every task a network namespace and a NIC of this rate, '
                        'shaped both ways (tc rates: 1gbit, 200mbit; needs root and iproute2)')
    parser.add_argument('--ps_link_bandwidth', default=None,
                        help='the ps tasks\' NIC rate (default: --link_bandwidth)')
    if '--' in argv:
        split = argv.index('--')
        own, tfhp_args = argv[:split], argv[split + 1:]
    else:
        own, tfhp_args = argv, []
    args = parser.parse_args(own)
    if args.num_ps < 0 or args.num_workers < 1:
        parser.error('--num_ps must be >= 0 and --num_workers >= 1')
    if args.ps_link_bandwidth and not args.link_bandwidth:
        parser.error('--ps_link_bandwidth needs --link_bandwidth')
    return args, tfhp_args


def _network(tasks, link_bandwidth, ps_link_bandwidth):
    """The emulated network of the link rates, or None; ValueError names what cannot work."""
    if not link_bandwidth:
        return None
    rate = links.parse_rate(link_bandwidth)
    ps_rate = links.parse_rate(ps_link_bandwidth) if ps_link_bandwidth else rate
    links.check_available()
    links.cleanup_stale()  # namespaces of launchers that were killed
    return links.EmulatedNetwork(tasks, rate, {t: ps_rate for t in tasks if t[0] == 'ps'})


def launch_job(num_ps, num_workers, tfhp_args, timeout_s=600.0, keep_going=False,
               controller=False, link_bandwidth=None, ps_link_bandwidth=None, out=None):
    """Runs a whole job on this machine and returns its summary (`cluster_summary`).

    Args:
      num_ps, num_workers: task counts.
      tfhp_args: the tfhp flags every task gets.
      timeout_s, keep_going: see `run_job`.
      controller: also start a controller task (the in-graph client).
      link_bandwidth: None (loopback), or a tc rate ('1gbit'): every task gets a network
        namespace and a NIC of that rate (`tfhp.cluster.links`), removed when the job ends.
      ps_link_bandwidth: the ps tasks' NIC rate (default: link_bandwidth).
      out: where task output goes (default: sys.stdout).
    Returns:
      (summary, results): the summary (`figures.cluster_summary`), with 'status' (see
      `run_job`), 'wall_time_s', 'exit_codes' and, on links, 'links' (`figures.link_report`); and {(job, index): result dict} of
      every worker (and controller) that wrote one.
    Raises:
      ValueError: a flag the launcher sets in tfhp_args, a bad rate, or links this machine
        cannot make (the message is one line naming it).
    """
    tasks = task_names(num_ps, num_workers, controller)
    result_dir = tempfile.mkdtemp(prefix='tfhp_launch_')
    network = None
    try:
        with links.exit_on_sigterm():
            network = _network(tasks, link_bandwidth, ps_link_bandwidth)
            hosts = network and {job: network.hosts(job) for job in {j for j, _ in tasks}}
            commands = task_commands(num_ps, num_workers, tfhp_args, result_dir,
                                     controller=controller, hosts=hosts)
            if network:
                commands = {t: network.command(t, argv) for t, argv in commands.items()}
            start = time.time()
            status, launch_times, codes = run_job(commands, timeout_s=timeout_s,
                                                  keep_going=keep_going, out=out,
                                                  bounds=task_bounds(tfhp_args))
            results = read_results(result_dir, [t for t in commands if t[0] != 'ps'])
            summary = figures.cluster_summary(results, launch_times)
            if network:
                summary['links'] = figures.link_report(network, tasks, results)
    finally:
        if network:
            network.close()
        shutil.rmtree(result_dir, ignore_errors=True)
    summary.update(status=status, wall_time_s=time.time() - start, num_ps=num_ps,
                   num_workers=num_workers, tfhp_args=list(tfhp_args),
                   exit_codes={figures.task_name(t): c for t, c in codes.items()})
    return summary, results


def _print_summary(summary):
    for task in summary['tasks']:
        first = task.get('start_to_first_step_s')
        print('[launch] %s: images/sec %.2f, first step %s after launch, dropped gradients %d'
              % (task['task'], task.get('images_per_sec') or 0.0,
                 '%.2f s' % first if first is not None else 'n/a', task['dropped_gradients']))
    for name, link in summary.get('links', {}).get('tasks', {}).items():
        print('[launch] %s link %.0f Mbit/s: %s' % (name, link['link_bps'] / 1e6, (
            '%.2f MB sent, %.2f MB received per step, >= %.2f ms of a global step' % (
                link['bytes_sent_per_step'] / 1e6, link['bytes_received_per_step'] / 1e6,
                link['comm_bound_ms'])) if 'comm_bound_ms' in link else 'no step'))
    if summary.get('links', {}).get('global_step_ms'):
        print('[launch] global step %.2f ms; the links take at least %.2f ms of it'
              % (summary['links']['global_step_ms'], summary['links']['comm_bound_ms']))
    print('[launch] cluster images/sec: %.2f  wall time: %.2f s  status: %d'
          % (summary['cluster_images_per_sec'], summary['wall_time_s'], summary['status']))


def main(argv=None):
    """Runs the job; returns the exit status (0 ok, 1 a task failed, 2 bad arguments, 128 + N
    stopped by signal N)."""
    args, tfhp_args = _parse(sys.argv[1:] if argv is None else argv)
    try:
        summary, _ = launch_job(args.num_ps, args.num_workers, tfhp_args, args.timeout_s,
                                args.keep_going, args.controller, args.link_bandwidth,
                                args.ps_link_bandwidth)
    except ValueError as e:
        print('tfhp-launch: error: %s' % e, file=sys.stderr)
        return 2
    _print_summary(summary)
    if args.result_file:
        timing.append_json(args.result_file, summary)
    return summary['status']


def run_main():
    """Console-script entry point (`tfhp-launch`)."""
    sys.exit(main())


if __name__ == '__main__':
    run_main()

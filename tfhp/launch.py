"""`python -m tfhp.launch --num_ps 2 --num_workers 4 -- <tfhp flags>`: a whole job, one machine.

Starts every task as its own process (`python -m tfhp --job_name=... <tfhp flags>`) on free
127.0.0.1 ports, prefixes each line a task prints with its name ("[worker 1] ..."), and ends
every task when the job is done or a task fails (then it exits with status 1). Serving tasks (ps)
exit by themselves once the workers are done; the launcher only waits for them, with a bound
derived from their own timeouts. SIGTERM or SIGINT to the launcher stops the job gracefully:
every task gets SIGTERM (the job stops at a common step and the chief writes its checkpoint),
the launcher says which tasks it stopped and exits with 128 + the signal's number; a second
signal kills every task at once. With --max_restarts=N a job that loses a task is started
again, up to N times, and resumes from the chief's last checkpoint (`tfhp.launcher.recovery`).
It prints, and appends as one JSON line to --result_file, each task's time from launch to its
first step, each worker's images/sec and dropped (late) gradients, and the cluster's images/sec:
every worker's images over the one wall-clock interval in which all of them were timing steps.
The tasks run in a network namespace of their own where the launcher may make one, so that
nothing outside the job reaches their servers (`tfhp.launcher.private_net`); else it names the
ports open to the machine's network (docs/security.md).

Its options are parsed with argparse, not absl, so that its flags and tfhp's (`tfhp.cli`) never
share a registry: both modules can be imported in one process (tests do).
Imports no TensorFlow: it starts and watches processes only.
"""
import argparse
import contextlib
import sys

from tfhp import timing
from tfhp.launcher import cpu_load
from tfhp.launcher import faults
from tfhp.launcher import link_config
from tfhp.launcher import local_job
from tfhp.launcher import plan
from tfhp.launcher import progress_log
from tfhp.launcher import recovery
from tfhp.launcher import supervisor


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
    parser.add_argument('--default_malloc', action='store_true',
                        help='run the tasks with glibc\'s default malloc settings instead of '
                        'two arenas and mapped large buffers (a third less memory per task)')
    parser.add_argument('--max_restarts', type=int, default=0,
                        help='restart the job this many times at most when a task fails; it '
                        'resumes from the chief\'s last checkpoint and ends at its target '
                        'global step (needs --train_dir and --save_model_steps or '
                        '--save_model_secs; default 0: a fault ends the job)')
    parser.add_argument('--colocate_ps', action='store_true',
                        help='on links, run ps task k on worker k\'s host, sharing its NIC '
                        '(servers beside the workers, as BytePS places them; needs '
                        '--link_bandwidth and --num_ps <= --num_workers)')
    for name, text in link_config.OPTIONS.items():
        parser.add_argument('--' + name, default=None, help=text)
    parser.add_argument('--inject', action='append', default=[], metavar='KIND:TASK@STEP',
                        help='inject a fault when the chief reaches a global step: '
                        'kill:worker1@15, pause:ps0@15+2 (SIGSTOP for 2 s), '
                        'link_down:worker1@20+3, slow_link:worker2@10+30x10 (rate / 10 for 30 '
                        's); the last two need --link_bandwidth; repeatable')
    if '--' in argv:
        split = argv.index('--')
        own, tfhp_args = argv[:split], argv[split + 1:]
    else:
        own, tfhp_args = argv, []
    args = parser.parse_args(own)
    if args.num_ps < 0 or args.num_workers < 1:
        parser.error('--num_ps must be >= 0 and --num_workers >= 1')
    if args.max_restarts < 0:
        parser.error('--max_restarts must be >= 0')
    if args.ps_link_bandwidth and not args.link_bandwidth:
        parser.error('--ps_link_bandwidth needs --link_bandwidth')
    for option in link_config.SETTINGS:
        if getattr(args, option) is not None and not args.link_bandwidth:
            parser.error('--%s needs --link_bandwidth' % option)
    try:
        args.link_options = link_config.parse(vars(args))
    except ValueError as e:
        parser.error(str(e))
    try:
        args.inject = [faults.parse(text) for text in args.inject]
        faults.check(args.inject, plan.task_names(args.num_ps, args.num_workers,
                                                  args.controller), bool(args.link_bandwidth),
                     args.colocate_ps)
    except ValueError as e:
        parser.error(str(e))
    return args, tfhp_args


def _print_summary(summary):
    for task in summary['tasks']:
        first = task.get('start_to_first_step_s')
        print('[launch] %s: images/sec %.2f, first step %s after launch, dropped gradients %d'
              % (task['task'], task.get('images_per_sec') or 0.0,
                 '%.2f s' % first if first is not None else 'n/a', task['dropped_gradients']))
        if task.get('startup_s'):
            print('[launch] %s start-up: %s' % (task['task'], ', '.join(
                '%s %.1f s' % (phase.replace('_', ' '), s)
                for phase, s in task['startup_s'].items())))
        if task.get('final_loss') is not None:
            print('[launch] %s loss: %s timed steps, %.4f final' % (task['task'], ' -> '.join(
                '%.4f' % task[k] for k in ('first_loss', 'last_loss') if k in task) or 'no',
                task['final_loss']))
    for name, link in summary.get('links', {}).get('tasks', {}).items():
        print('[launch] %s link %.0f Mbit/s: %s' % (name, link['link_bps'] / 1e6, (
            '%.2f MB sent, %.2f MB received per step, >= %.2f ms of a global step' % (
                link['bytes_sent_per_step'] / 1e6, link['bytes_received_per_step'] / 1e6,
                link['comm_bound_ms'])) if 'comm_bound_ms' in link else 'no step'))
        if any(link.get(k) for k in ('dropped_sent', 'dropped_received', 'tcp_retransmits',
                                     'tcp_timeouts')):
            print('[launch] %s link lost: %d packets dropped sending, %d dropped before it '
                  'received them; TCP resent %d segments, %d after a timeout'
                  % (name, link['dropped_sent'], link['dropped_received'],
                     link['tcp_retransmits'], link['tcp_timeouts']))
    if 'links' in summary:
        report = summary['links']
        print('[launch] links: a fair queue per task\'s NIC, switch ports of %s, TCP %s' % (
            '%d bytes' % report['port_buffer_bytes'] if report['port_buffer_bytes'] else
            '20 ms of the rate', report['tcp']))
    if summary.get('links', {}).get('incast'):
        cause = summary['links']['incast']
        print('[launch] incast: %s\'s switch port dropped %d packets, and TCP timed out %.1f '
              'times a global step; deepen the ports (--link_port_buffer=1.25mb: 16 workers at '
              '100 Mbit/s then ran within 5%% of the step model)'
              % (cause['task'], cause['dropped'], cause['tcp_timeouts_per_step']))
    if summary.get('links', {}).get('global_step_ms'):
        print('[launch] global step %.2f ms; the links take at least %.2f ms of it'
              % (summary['links']['global_step_ms'], summary['links']['comm_bound_ms']))
    cpu = summary.get('cpu', {})
    if cpu.get('busy_timed') is not None:
        verdict = (': the CPU, not the links, set these steps' if cpu['cpu_bound'] else
                   ': an injected straggler (%s) set these steps, not the CPU' % cpu['straggler']
                   if cpu.get('straggler') else '')
        print('[launch] the job kept %d cores %.0f%% busy during the timed steps, %d tasks%s'
              % (cpu['cores'], 100 * cpu['busy_timed'], cpu['tasks'], verdict))
    if 'root_cause' in summary:
        cause = summary['root_cause']
        print('[launch] root cause: %s (%s): %s' % (cause['task'], supervisor.describe_status(
            cause['status']), cause['last_line'] or 'no output'))
    for fault in summary.get('faults_injected', []):
        print('[launch] injected %s into %s at %.1f s (attempt %d, global step %s)%s'
              % (fault['kind'], fault['task'], fault['at_s'], fault['attempt'],
                 fault['global_step'], ', for %g s' % fault['for_s'] if fault['for_s'] else ''))
    if 'recovery' in summary:
        recovered = summary['recovery']
        print('[launch] %d restart(s), %d steps redone, %.1f s lost'
              % (recovered['restarts'], recovered['steps_redone'], recovered['time_lost_s']))
    print('[launch] cluster images/sec: %.2f  wall time: %.2f s  status: %d'
          % (summary['cluster_images_per_sec'], summary['wall_time_s'], summary['status']))


def main(argv=None):
    """Runs the job; returns the exit status (0 ok, 1 a task failed, 2 bad arguments, 128 + N
    stopped by signal N)."""
    args, tfhp_args = _parse(sys.argv[1:] if argv is None else argv)
    warning = cpu_load.oversubscription(
        args.num_workers, args.num_ps, any(a.startswith('--emulated_compute=') and
                                           a.split('=', 1)[1] for a in tfhp_args))
    if warning:
        print('[launch] warning: ' + warning)
    launch_args = dict(timeout_s=args.timeout_s, keep_going=args.keep_going,
                       controller=args.controller, link_bandwidth=args.link_bandwidth,
                       ps_link_bandwidth=args.ps_link_bandwidth, link_options=args.link_options,
                       colocate_ps=args.colocate_ps,
                       lean_malloc=not args.default_malloc)
    say = lambda line: print('[launch] ' + line, flush=True)  # noqa: E731
    injector = faults.Injector(say) if args.inject else None
    try:
        # A fault fires at a global step, and a restart resumes where the log says.
        with (progress_log.ensured(tfhp_args) if injector or args.max_restarts else
              contextlib.nullcontext((tfhp_args, None))) as (tfhp_args, progress_path):
            if injector:
                injector.progress_path = progress_path
            with faults.Schedule(args.inject, injector):
                if args.max_restarts:
                    summary, _ = recovery.launch_recovering(
                        args.num_ps, args.num_workers, tfhp_args, args.max_restarts, say=say,
                        injector=injector, **launch_args)
                else:
                    summary, _ = local_job.launch_job(args.num_ps, args.num_workers, tfhp_args,
                                                      injector=injector, **launch_args)
    except ValueError as e:
        print('tfhp-launch: error: %s' % e, file=sys.stderr)
        return 2
    if injector:
        summary['faults_injected'] = injector.records
    _print_summary(summary)
    if args.result_file:
        timing.append_json(args.result_file, summary)
    return summary['status']


def run_main():
    """Console-script entry point (`tfhp-launch`)."""
    sys.exit(main())


if __name__ == '__main__':
    run_main()

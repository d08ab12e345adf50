"""A whole job on this machine: every task its own process, on loopback or on emulated links,
and the job's summary. Either way only the job's tasks can reach its ports: on loopback they run
in a network of their own (`private_net`) where this process may create one; on links each has
a namespace whose only peers are the job's. Imports no TensorFlow: it starts and watches
processes only."""
import contextlib
import shutil
import sys
import tempfile
import time

from tfhp.launcher import cpu_load
from tfhp.launcher import figures
from tfhp.launcher import link_config
from tfhp.launcher import links
from tfhp.launcher import plan
from tfhp.launcher import private_net
from tfhp.launcher import supervisor


def _network(tasks, link_bandwidth, ps_link_bandwidth, link_options, colocate_ps):
    """The emulated network of the link rates, or None; ValueError names what cannot work.
    With colocate_ps the ps tasks get no host of their own (`_host`)."""
    num_ps = sum(1 for job, _ in tasks if job == 'ps')
    num_workers = sum(1 for job, _ in tasks if job == 'worker')
    if colocate_ps and not link_bandwidth:
        raise ValueError('--colocate_ps needs --link_bandwidth: on loopback every task shares '
                         'one host already')
    if colocate_ps and num_ps > num_workers:
        raise ValueError('--colocate_ps puts ps task k on worker k\'s host: --num_ps=%d is more '
                         'than --num_workers=%d' % (num_ps, num_workers))
    if colocate_ps and ps_link_bandwidth:
        raise ValueError('--ps_link_bandwidth cannot apply with --colocate_ps: the ps tasks '
                         'share the workers\' NICs')
    if not link_bandwidth:
        return None
    rate = link_config.parse_rate(link_bandwidth)
    ps_rate = link_config.parse_rate(ps_link_bandwidth) if ps_link_bandwidth else rate
    links.check_available()
    links.cleanup_stale()  # namespaces of launchers that were killed
    hosts = [t for t in tasks if not (colocate_ps and t[0] == 'ps')]
    return links.EmulatedNetwork(hosts, rate, {t: ps_rate for t in hosts if t[0] == 'ps'},
                                 options=link_options)


def _host(network, task):
    """The task whose namespace and NIC `task` runs on: its own, or, for a ps task co-located
    (not a task of the network), worker k's for ps task k."""
    return task if tuple(task) in network.tasks else ('worker', task[1])


def _addresses(network, tasks):
    """{job: ['IP:PORT' by index]} of the tasks on the network's hosts; a co-located ps task
    listens on its host's next port."""
    addresses = {}
    for task in sorted(tasks):
        host = _host(network, task)
        port = links.PORT + (host != tuple(task))
        addresses.setdefault(task[0], []).append('%s:%d' % (network.ip(host), port))
    return addresses


def _say(out, line):
    out = out or sys.stdout
    out.write('[launch] %s\n' % line)
    out.flush()


def injected_straggler(tfhp_args, injector=None):
    """What slowed a worker on purpose in a job of `tfhp_args`: '--straggler_delay_ms=200',
    or the pauses and slowed links `injector` (a `faults.Injector`) injected ('pause worker
    1'); None when nothing did."""
    delay = float(plan.flag_value(tfhp_args, 'straggler_delay_ms', 0) or 0)
    if delay > 0 and plan.flag_value(tfhp_args, 'straggler_workers'):
        return '--straggler_delay_ms=%g' % delay
    slowed = ['%s %s' % (r['kind'], r['task']) for r in (injector.records if injector else [])
              if r['kind'] in ('pause', 'slow_link')]
    return ', '.join(slowed) or None


def launch_job(num_ps, num_workers, tfhp_args, timeout_s=600.0, keep_going=False,
               controller=False, link_bandwidth=None, ps_link_bandwidth=None, out=None,
               lean_malloc=True, injector=None, link_options=None, colocate_ps=False):
    """Runs a whole job on this machine and returns its summary (`cluster_summary`).

    Args:
      num_ps, num_workers: task counts.
      tfhp_args: the tfhp flags every task gets.
      timeout_s, keep_going: see `supervisor.run_job`.
      controller: also start a controller task (the in-graph client).
      link_bandwidth: None (loopback: the tasks share one network namespace of their own,
        `private_net`, or where none can be created the machine's, which the job's output
        then says once), or a tc rate ('1gbit'): every task gets a network namespace and a
        NIC of that rate (`tfhp.launcher.links`). Namespaces are removed when the job ends.
      ps_link_bandwidth: the ps tasks' NIC rate (default: link_bandwidth).
      link_options: on links, how the hosts and the switch behave (`link_config.LinkOptions`;
        None: its defaults).
      colocate_ps: on links, ps task k runs on worker k's host and shares its NIC (BytePS's
        servers beside the workers: with a ps task per worker, each NIC carries 2(W-1)/W of
        the model each way, a ring all-reduce's bytes); needs num_ps <= num_workers.
      out: where task output goes (default: sys.stdout).
      lean_malloc: the tasks run with `plan.LEAN_MALLOC` (False: glibc's defaults).
      injector: a `faults.Injector` that gets the tasks and network once they started, and
        ends its faults before the network goes.
    Returns:
      (summary, results): the summary (`figures.cluster_summary`), with 'status' (see
      `supervisor.run_job`), 'wall_time_s', 'exit_codes', 'ended_by_launcher', a failed
      job's 'root_cause' (task, status and its last line) and, on links, 'links'
      (`figures.link_report`); and {(job, index): result dict} of every worker (and
      controller) that wrote one.
    Raises:
      ValueError: a flag the launcher sets in tfhp_args, a bad rate, or links this machine
        cannot make (the message is one line naming it).
    """
    tasks = plan.task_names(num_ps, num_workers, controller)
    result_dir = tempfile.mkdtemp(prefix='tfhp_launch_')
    network = None
    try:
        with links.exit_on_sigterm(), contextlib.ExitStack() as private:
            network = _network(tasks, link_bandwidth, ps_link_bandwidth, link_options,
                               colocate_ps)
            commands = plan.task_commands(num_ps, num_workers, tfhp_args, result_dir,
                                          controller=controller,
                                          hosts=network and _addresses(network, tasks))
            if network:
                commands = {t: network.command(_host(network, t), argv)
                            for t, argv in commands.items()}
            else:
                commands = private.enter_context(private_net.isolated(
                    commands, lambda line: _say(out, line), bool(plan.linger_s(tfhp_args))))
            start = time.time()
            with cpu_load.CpuSampler() as cpu:

                def on_start(procs):
                    cpu.watch(proc.pid for proc in procs.values())
                    if injector:
                        injector.attach(procs, network)
                end = supervisor.run_job(
                    commands, timeout_s=timeout_s, keep_going=keep_going, out=out,
                    bounds=plan.task_bounds(tfhp_args), lean_malloc=lean_malloc,
                    linger_s=plan.linger_s(tfhp_args), on_start=on_start)
            results = supervisor.read_results(result_dir, [t for t in commands if t[0] != 'ps'])
            summary = figures.cluster_summary(results, end.launch_times)
            summary['cpu'] = cpu_load.report(cpu, results.get(('worker', 0)), len(commands),
                                             straggler=injected_straggler(tfhp_args, injector))
            if network:
                summary['links'] = figures.link_report(network, network.tasks, results)
    finally:
        if injector:
            injector.detach()
        if network:
            network.close()
        shutil.rmtree(result_dir, ignore_errors=True)
    summary.update(status=end.status, wall_time_s=time.time() - start, num_ps=num_ps,
                   num_workers=num_workers, tfhp_args=list(tfhp_args),
                   exit_codes={figures.task_name(t): c for t, c in end.return_codes.items()},
                   ended_by_launcher=[figures.task_name(t) for t in end.ended])
    if end.root_cause:
        task, code, line = end.root_cause
        summary['root_cause'] = {'task': figures.task_name(task), 'status': code,
                                 'last_line': line}
    return summary, results

"""A job's figures from its tasks' results: the launcher's summary and its link report.

Pure Python (the launcher imports no TensorFlow). `cluster_summary` reads the workers' result
records (`tfhp.runner.results`); `link_report` reads an emulated network's counters
(`tfhp.launcher.links`).
"""
import dataclasses

from tfhp import counts
from tfhp import startup
from tfhp.launcher import links


def task_name(task):
    """'worker 1' for ('worker', 1): how results and messages name a task."""
    return '%s %d' % task


def union_length(intervals):
    """Total length of the union of (begin, end) intervals."""
    total, reach = 0.0, None
    for begin, end in sorted(intervals):
        if reach is None or begin > reach:
            total += end - begin
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


# Per-task figures the summary copies from each worker's result when present.
_TASK_FIELDS = ('num_steps', 'images', 'images_per_sec', 'dropped_gradients', 'dropped_images',
                'warmup_steps', 'warmup_dropped_gradients', 'warmup_dropped_images',
                'session_start_time',
                'session_ready_time', 'variables_checksum', 'variable_bytes_by_device',
                'global_step', 'stopped_by', 'first_loss', 'last_loss', 'final_loss', 'events')


def startup_breakdown(result, launch_time):
    """{phase: seconds} of a worker's start from its launch (`tfhp.startup.breakdown` of its
    result's marks and session and first-step times)."""
    marks = dict(result.get('startup_times') or {})
    marks.update((k, result[k]) for k in ('session_ready_time', 'first_step_time')
                 if result.get(k))
    return startup.breakdown(marks, launch_time)


def cluster_summary(results, launch_times):
    """The job's figures from the workers' (or the in-graph client's) result dicts.

    Per worker: its timed steps and images, its own images/sec, dropped gradients and images
    of its timed steps and of its warm-up, and the staleness of its timed updates. For the job:
      cluster_images_per_sec: every worker's timed images over the union of the workers' timed
        windows (first timed step's start to last one's end): never above the sum of the
        workers' own rates (each window is within the union), equal to it for workers timing
        over the same window;
      applied_images_per_sec: the images of the gradients applied (timed steps less dropped
        late or stale gradients) over the same union;
      worker_images_per_sec: the workers' own rates; staleness over every timed update.

    Args:
      results: {(job, index): result dict written by tfhp.cluster.worker or tfhp.runner.benchmark}.
      launch_times: {(job, index): epoch seconds the task was started}.
    Returns:
      A JSON-ready dict.
    """
    tasks = []
    for (job, index), r in sorted(results.items()):
        entry = {'task': task_name((job, index))}
        entry.update({k: r[k] for k in _TASK_FIELDS if k in r})
        entry.update(counts.summary(r))
        entry.setdefault('dropped_gradients', 0)
        entry.setdefault('dropped_images', 0)
        if r.get('first_step_time'):
            entry['start_to_first_step_s'] = r['first_step_time'] - launch_times[(job, index)]
        if r.get('session_ready_time'):
            entry['start_to_session_s'] = r['session_ready_time'] - launch_times[(job, index)]
        if r.get('startup_times'):
            entry['startup_s'] = startup_breakdown(r, launch_times[(job, index)])
        tasks.append(entry)
    summary = {'tasks': tasks,
               'worker_images_per_sec': {t['task']: t.get('images_per_sec') for t in tasks}}
    for name in ('dropped_gradients', 'dropped_images', 'warmup_dropped_gradients',
                 'warmup_dropped_images', 'stale_gradients_dropped'):
        summary[name] = sum(t.get(name, 0) for t in tasks)
    timed = [r for r in results.values() if r.get('end_times')]
    if timed and all('timed_start_time' in r for r in timed):
        window = union_length([(r['timed_start_time'], r['end_times'][-1]) for r in timed])
        images = sum(r['images_per_step'] * len(r['end_times']) for r in timed)
        applied = sum(r['images_per_step'] * (len(r['end_times']) - r.get('dropped_gradients', 0)
                                              - r.get('stale_gradients_dropped', 0))
                      for r in timed)
        summary.update(timed_window_s=window, timed_images=images,
                       cluster_images_per_sec=images / window if window > 0 else 0.0,
                       applied_images_per_sec=applied / window if window > 0 else 0.0)
    else:
        # The in-graph client's one result: its own figure.
        summary['cluster_images_per_sec'] = sum(r.get('images_per_sec') or 0.0
                                                for r in results.values())
    summary.update(counts.summary(list(results.values())))
    chief = results.get(('worker', 0)) or results.get(('controller', 0)) or {}
    summary['global_steps_per_sec'] = chief.get('global_steps_per_sec')
    summary['global_step'] = chief.get('global_step')
    summary['start_global_step'] = chief.get('start_global_step')
    return summary


def incast(report, global_steps):
    """Where many senders overflowed one switch port, from a link report's tasks: {'task': the
    task whose port dropped most, 'dropped': its drops, 'tcp_timeouts_per_step': the job's
    timeouts per global step}, when the job's TCP timed out at least once a global step (each
    idles a flow for its timeout: a step's worth of loss the bounds do not count); else None.
    """
    timeouts = sum(e['tcp_timeouts'] for e in report.values())
    if not report or not global_steps or timeouts < global_steps:
        return None
    worst = max(report, key=lambda name: report[name]['dropped_received'])
    if not report[worst]['dropped_received']:
        return None
    return {'task': worst, 'dropped': report[worst]['dropped_received'],
            'tcp_timeouts_per_step': timeouts / global_steps}


def link_report(network, tasks, results):
    """Per task: its NIC's rate, the bytes on its link each way (per step of its own: a ps
    task's are the job's global steps), and the least time per global step they take at that
    rate; for the job, the largest of those: no global step can be faster (`comm_bound_ms`).

    The bytes include start-up (variable initialisation, session set-up), so over few steps the
    per-step figures are high. Each task's entry also holds its losses (`links.losses`: drops
    at its queues, its TCP's retransmissions and timeouts), and the job's `tcp_timeouts` sums
    them: a timeout stalls a flow for 200 ms or more (Linux's floor, unless the links lower
    it), which no bound here counts. `incast` names the task whose switch port dropped most,
    when the job timed out at least once a global step.
    """
    chief = results.get(('worker', 0), {})
    global_steps = chief.get('global_step', 0) - chief.get('start_global_step', 0)
    report = {}
    for task in tasks:
        up, down = network.shaped_bytes(task)
        result = results.get(task, {})
        steps = (result.get('warmup_steps', 0) + result.get('num_steps', 0)
                 if task[0] != 'ps' else global_steps)
        rate = network.rate_bps(task)
        entry = {'link_bps': rate, 'bytes_sent': up, 'bytes_received': down, 'steps': steps}
        entry.update(network.losses(task))
        if steps:
            entry.update(bytes_sent_per_step=up / steps, bytes_received_per_step=down / steps)
        if global_steps:
            entry['comm_bound_ms'] = 1000.0 * 8 * max(up, down) / global_steps / rate
        report[task_name(task)] = entry
    bounds = [e['comm_bound_ms'] for e in report.values() if 'comm_bound_ms' in e]
    rate = chief.get('global_steps_per_sec')
    return {'tasks': report, 'comm_bound_ms': max(bounds) if bounds else None,
            'global_step_ms': 1000.0 / rate if rate else None,
            'tcp_timeouts': sum(e['tcp_timeouts'] for e in report.values()),
            'incast': incast(report, global_steps),
            'tcp': network.options.congestion_control or links.congestion_control(),
            **dataclasses.asdict(network.options)}

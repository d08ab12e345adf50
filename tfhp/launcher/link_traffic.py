"""The bytes each task of a job on emulated links moves during its timed steps only.

The launcher's link report (`figures.link_report`) reads each NIC's token-bucket counters once,
after the job: its bytes per step include start-up and shut-down. Measured (null_dense,
16.8 MB of float32, 1 worker, 1 ps, 1gbit, 3 and 13 steps): the difference of the two jobs is
17.56 MB each way per step, and each job carries one extra read of every variable (17.5 MB to the
worker: the final checksum), so over 6 steps the per-step figure is 17% high.

`NicSampler` reads, every `interval_s` while a job runs, the eth0 counters of every task
process that is a child of this process (`/proc/<pid>/net/dev` shows the counters of the
process's network namespace; the task is named by its `--job_name`/`--task_index` flags);
tasks still in this process's namespace (loopback jobs) are not sampled. `window_bytes`
interpolates each task's counters at the edges of a time window (the chief's timed steps), and
`timed_report` turns them into bytes per global step on the wire, scaled by the ratio of the
token buckets' totals to the interfaces' (a veth counts a GSO packet's headers once, the token
bucket every frame's: about 3% more here), and the least time those bytes take at each NIC's
rate.

Reads only /proc; imports no TensorFlow and nothing of tfhp.
"""
import bisect
import os
import threading
import time

_DEVICE = 'eth0'


def parse_net_dev(text, device=_DEVICE):
    """(bytes sent, bytes received) of `device` in a /proc/net/dev listing, or None."""
    for line in text.splitlines():
        name, sep, counters = line.partition(':')
        if sep and name.strip() == device:
            fields = counters.split()
            return int(fields[8]), int(fields[0])  # transmit bytes, receive bytes
    return None


def task_of(argv):
    """(job, index) a tfhp task's command line names (`--job_name=ps --task_index=0`), or None.

    Args:
      argv: the process's arguments, e.g. /proc/<pid>/cmdline split at NUL.
    """
    values = {}
    for arg in argv:
        name, sep, value = arg.partition('=')
        if sep and name in ('--job_name', '--task_index'):
            values[name] = value
    if '--job_name' not in values:
        return None
    return values['--job_name'], int(values.get('--task_index', '0'))


def interpolate(series, when):
    """A counter's value at time `when` from samples [(time, value)], in time order.

    Linear between the samples around `when`; before the first sample or after the last, that
    sample's value (the counters are not known beyond them).
    """
    times = [t for t, _ in series]
    i = bisect.bisect_left(times, when)
    if i == 0:
        return series[0][1]
    if i == len(series):
        return series[-1][1]
    (t0, v0), (t1, v1) = series[i - 1], series[i]
    return v0 + (v1 - v0) * (when - t0) / (t1 - t0) if t1 > t0 else v1


def window_bytes(samples, begin, end):
    """{task: (bytes sent, bytes received)} by each task between times `begin` and `end`.

    Args:
      samples: {task: [(time, bytes sent, bytes received)]} in time order (`NicSampler`).
      begin, end: the window, in the samples' clock (epoch seconds).
    """
    window = {}
    for task, series in samples.items():
        if series:
            sent = [(t, s) for t, s, _ in series]
            received = [(t, r) for t, _, r in series]
            window[task] = (interpolate(sent, end) - interpolate(sent, begin),
                            interpolate(received, end) - interpolate(received, begin))
    return window


def timed_window(chief_result):
    """(begin, end, global steps) of the chief's timed steps, from its result dict; or None."""
    end_times = chief_result.get('end_times')
    rate = chief_result.get('global_steps_per_sec')
    if not end_times or not rate or 'timed_start_time' not in chief_result:
        return None
    begin, end = chief_result['timed_start_time'], end_times[-1]
    return begin, end, rate * (end - begin)


def timed_report(samples, link_tasks, chief_result):
    """Bytes per global step each NIC moved during the chief's timed steps, and their bound.

    Args:
      samples: {(job, index): [(time, bytes sent, bytes received)]} from `NicSampler`
        (interface counters).
      link_tasks: the launcher's per-task link report, {'ps 0': {'link_bps', 'bytes_sent',
        'bytes_received', ...}} (token-bucket totals of the whole job).
      chief_result: worker 0's result dict (its timed window and global steps/sec).
    Returns:
      None without a timed window or samples; else {'tasks': {'ps 0': {'link_bps',
      'bytes_sent_per_step', 'bytes_received_per_step', 'comm_bound_ms'}}, 'comm_bound_ms':
      the largest (no global step can be faster), 'window_s', 'global_steps'}. Bytes are on
      the wire: the interfaces' window bytes times each direction's ratio of the token
      bucket's total to the interface's last sample.
    """
    window = timed_window(chief_result)
    if window is None or not samples:
        return None
    begin, end, steps = window
    moved = window_bytes(samples, begin, end)
    tasks = {}
    for (job, index), (sent, received) in sorted(moved.items()):
        name = '%s %d' % (job, index)
        link = link_tasks.get(name)
        if not link or steps <= 0:
            continue
        _, last_sent, last_received = samples[(job, index)][-1]
        sent *= link['bytes_sent'] / last_sent if last_sent else 1.0
        received *= link['bytes_received'] / last_received if last_received else 1.0
        tasks[name] = {'link_bps': link['link_bps'], 'bytes_sent_per_step': sent / steps,
                       'bytes_received_per_step': received / steps,
                       'comm_bound_ms': 1000.0 * 8 * max(sent, received) / steps /
                                        link['link_bps']}
    if not tasks:
        return None
    return {'tasks': tasks, 'comm_bound_ms': max(t['comm_bound_ms'] for t in tasks.values()),
            'window_s': end - begin, 'global_steps': steps}


def _children(pid):
    children = []
    for tid in os.listdir('/proc/%d/task' % pid):
        try:
            with open('/proc/%d/task/%s/children' % (pid, tid)) as f:
                children += [int(c) for c in f.read().split()]
        except OSError:  # the thread ended meanwhile
            pass
    return children


class PeriodicSampler:
    """Calls `sample()` every interval_s in a daemon thread while used as a context manager
    around a job, and once more as it ends (subclasses say what one sample reads)."""

    def __init__(self, interval_s):
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc_info):
        self._stop.set()
        self._thread.join()
        self.sample()

    def _loop(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def sample(self):
        """Takes one sample (the thread calls this)."""
        raise NotImplementedError


class NicSampler(PeriodicSampler):
    """Samples the eth0 counters of this process's task children in a thread (module doc).

    Use as a context manager around a job (`local_job.launch_job` runs its tasks as children of
    the calling process); `samples` holds {(job, index): [(time, sent, received)]}.
    """

    def __init__(self, interval_s=0.02):
        super().__init__(interval_s)
        self.samples = {}
        self._own_namespace = os.readlink('/proc/self/ns/net')
        self._tasks = {}  # pid -> (job, index) of the task children named so far

    def sample(self):
        """Reads every task child's counters once (the thread calls this)."""
        for pid in _children(os.getpid()):
            try:
                task = self._tasks.get(pid)
                if task is None:
                    # Not cached while unnamed: between fork and exec a child shows our own
                    # command line, so a task read then would be missed for good.
                    with open('/proc/%d/cmdline' % pid) as f:
                        task = task_of(f.read().split('\0'))
                    if task is not None:
                        self._tasks[pid] = task
                # Until `ip netns exec` has entered the task's namespace, the process sees ours.
                if task is None or os.readlink('/proc/%d/ns/net' % pid) == self._own_namespace:
                    continue
                with open('/proc/%d/net/dev' % pid) as f:
                    counters = parse_net_dev(f.read())
                now = time.time()
            except (OSError, ValueError):  # the process ended meanwhile
                continue
            if counters:
                self.samples.setdefault(task, []).append((now,) + counters)

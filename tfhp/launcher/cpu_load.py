"""How busy the machine's cores were while a job's timed steps ran: the check that tells a
measurement of the cluster from a measurement of cores shared by too many tasks.

`CpuSampler` reads /proc/stat's total line in a thread while a job runs; `busy_fraction` is the
share of core time spent outside idle and iowait between two times (interpolated between the
samples). A job whose timed steps kept the cores this busy or more (CPU_BOUND) was set by the
CPU, not by its links or its protocol: the launcher says so in the summary. Imports no
TensorFlow.
"""
import os
import time

from tfhp.launcher import link_traffic

# At or above this busy share of every core, the cores, not the links, set a step.
CPU_BOUND = 0.9


def read_stat(text):
    """(busy, total) core ticks of /proc/stat's first ('cpu') line."""
    fields = [int(v) for v in text.splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    total = sum(fields[:8])  # guest time is counted in user already
    return total - idle, total


def cores():
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity call on this OS
        return os.cpu_count() or 1


class CpuSampler(link_traffic.PeriodicSampler):
    """Samples /proc/stat every interval_s in a thread; use as a context manager around a job.

    `samples` holds [(time, busy ticks, total ticks)] in time order.
    """

    def __init__(self, interval_s=0.1):
        super().__init__(interval_s)
        self.samples = []

    def sample(self):
        """Reads /proc/stat once (the thread calls this)."""
        with open('/proc/stat') as f:
            busy, total = read_stat(f.read())
        self.samples.append((time.time(), busy, total))

    def busy_fraction(self, begin, end):
        """Share of all cores' time that was busy between `begin` and `end` (epoch seconds), or
        None without two samples around the window."""
        if len(self.samples) < 2 or end <= begin:
            return None
        busy = [(t, b) for t, b, _ in self.samples]
        total = [(t, n) for t, _, n in self.samples]
        ticks = (link_traffic.interpolate(total, end) - link_traffic.interpolate(total, begin))
        if ticks <= 0:
            return None
        share = (link_traffic.interpolate(busy, end) -
                 link_traffic.interpolate(busy, begin)) / ticks
        # Each counter is interpolated apart: a fully busy window can come out a rounding above 1.
        return min(1.0, share)


def oversubscription(num_workers, num_ps, emulated, num_cores=None, busy=None,
                     model_flags=('--model=MODEL',)):
    """A warning, with the counts, when a job's workers compute on more tasks than there are
    cores (each worker's compute then runs several times slower than alone: a measurement of
    the cores, not of the cluster), offering emulated compute with its commands; None when they
    fit or the compute is emulated.

    Args:
      num_workers, num_ps: the job's tasks.
      emulated: the job's compute is emulated (--emulated_compute).
      num_cores: the cores the tasks share (default: `cores()`).
      busy: the cores' busy share in the timed steps, a `tfhp.timing.Range` (None: unknown).
      model_flags: the job's flags that shape its model's compute, --model first (python -m
        tfhp.calibrate takes each of them).
    """
    num_cores = num_cores or cores()
    if emulated or num_workers + num_ps <= num_cores:
        return None
    model = model_flags[0].split('=', 1)[1]
    return ('%d tasks (%d workers, %d ps) share %d cores%s: each worker computes about %.1fx '
            'slower than alone, so this job measures the cores, not the cluster. Emulated '
            'compute measures the cluster: python -m tfhp.calibrate %s --output=%s.json, then '
            'the same job with --emulated_compute=%s.json' % (
                num_workers + num_ps, num_workers, num_ps, num_cores,
                ', %s busy in the timed steps' % busy.text('%.0f%%', 100.0) if busy else '',
                (num_workers + num_ps) / float(num_cores), ' '.join(model_flags), model, model))


def report(sampler, chief_result, num_tasks):
    """The summary's 'cpu': cores, tasks, and the busy share of the cores over the chief's timed
    steps ('busy_timed', None without a timed window), with 'cpu_bound' when it is CPU_BOUND or
    more."""
    window = link_traffic.timed_window(chief_result or {})
    busy = sampler.busy_fraction(window[0], window[1]) if window else None
    return {'cores': cores(), 'tasks': num_tasks, 'busy_timed': busy,
            'cpu_bound': busy is not None and busy >= CPU_BOUND}

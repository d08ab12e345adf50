"""How busy a job kept the machine's cores while its timed steps ran: the check that tells a
measurement of the cluster from a measurement of cores shared by too many tasks.

`CpuSampler` reads, in a thread while a job runs, the CPU time of the job's own processes (each
task and its descendants: utime + stime of /proc/PID/stat), so that other users' load on the
machine is not counted; `busy_fraction` is that time's share of all cores' time between two
times (interpolated between the samples). A job whose timed steps kept the cores this busy or
more (CPU_BOUND) was set by the CPU, not by its links or its protocol, unless a straggler was
injected (its delay sets the step while the cores wait): the launcher says which. `read_stat`
reads the machine's total line, for callers that want the machine's share. Imports no
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


def read_process_stat(text):
    """(ppid, utime + stime ticks) of one /proc/PID/stat line."""
    # The command name, in parentheses, may hold spaces and parentheses: split after the last.
    fields = text[text.rindex(')') + 2:].split()
    return int(fields[1]), int(fields[11]) + int(fields[12])


def job_ticks(processes, roots):
    """CPU ticks of the processes `roots` and all their descendants."""
    return sum(job_processes(processes, roots).values())


def job_processes(processes, roots):
    """{pid: CPU ticks} of the processes `roots` and all their descendants.

    Args:
      processes: {pid: (ppid, ticks)} of the machine's processes (`read_process_stat`).
      roots: the job's task pids.
    """
    children = {}
    for pid, (ppid, _) in processes.items():
        children.setdefault(ppid, []).append(pid)
    seen, pending = set(), [pid for pid in roots if pid in processes]
    while pending:
        pid = pending.pop()
        if pid not in seen:
            seen.add(pid)
            pending.extend(children.get(pid, []))
    return {pid: processes[pid][1] for pid in seen}


def _processes():
    """{pid: (ppid, ticks)} of this machine's processes now (those that end meanwhile are left
    out)."""
    found = {}
    for name in os.listdir('/proc'):
        if name.isdigit():
            try:
                with open('/proc/%s/stat' % name) as f:
                    found[int(name)] = read_process_stat(f.read())
            except (OSError, ValueError):
                continue
    return found


def cores():
    """Cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # no affinity call on this OS
        return os.cpu_count() or 1


class CpuSampler(link_traffic.PeriodicSampler):
    """Samples the CPU time of a job's processes every interval_s in a thread; use as a context
    manager around a job, and `watch` its tasks once they started.

    `samples` holds [(time, the job's busy ticks, all cores' ticks)] in time order. The job's
    ticks are those its processes used since `watch`; a process that ended keeps its last
    reading, so the count never falls (a tiny job's tasks end within a sample of its last
    timed step, which read 0% busy when their ticks left with them).

    Args:
      interval_s: between samples.
      processes: () -> {pid: (ppid, ticks)} (default: /proc's).
      clock: () -> seconds (default: time.time).
      ticks_per_s: the kernel's clock ticks per second (default: SC_CLK_TCK).
      num_cores: cores the job may use (default: `cores()`).
    """

    def __init__(self, interval_s=0.1, processes=_processes, clock=time.time, ticks_per_s=None,
                 num_cores=None):
        super().__init__(interval_s)
        self.samples = []
        self._processes, self._clock = processes, clock
        self._ticks_per_s = ticks_per_s or os.sysconf('SC_CLK_TCK')
        self._num_cores = num_cores or cores()
        self._roots = ()
        self._last = {}

    def watch(self, pids):
        """Counts the processes `pids` (a job attempt's tasks) and their descendants from now."""
        self._roots = tuple(pids)
        self._last = {}

    def sample(self):
        """Reads the job's processes once (the thread calls this)."""
        now = self._clock()
        if self._roots:
            self._last.update(job_processes(self._processes(), self._roots))
        self.samples.append((now, sum(self._last.values()),
                             now * self._ticks_per_s * self._num_cores))

    def busy_fraction(self, begin, end):
        """Share of all cores' time that the job kept busy between `begin` and `end` (epoch
        seconds), or None without two samples around the window."""
        if len(self.samples) < 2 or end <= begin:
            return None
        busy = [(t, b) for t, b, _ in self.samples]
        total = [(t, n) for t, _, n in self.samples]
        ticks = (link_traffic.interpolate(total, end) - link_traffic.interpolate(total, begin))
        if ticks <= 0:
            return None
        share = (link_traffic.interpolate(busy, end) -
                 link_traffic.interpolate(busy, begin)) / ticks
        # Each counter is interpolated apart: a fully busy window can come out a rounding above
        # 1.
        return min(1.0, max(0.0, share))


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


def report(sampler, chief_result, num_tasks, straggler=None):
    """The summary's 'cpu': cores, tasks, and the share of the cores the job kept busy over the
    chief's timed steps ('busy_timed', None without a timed window), with 'cpu_bound' when it
    is CPU_BOUND or more and no straggler was injected; 'straggler' (what was injected) when
    one was: its delay, not the cores, set those steps."""
    window = link_traffic.timed_window(chief_result or {})
    busy = sampler.busy_fraction(window[0], window[1]) if window else None
    cpu = {'cores': cores(), 'tasks': num_tasks, 'busy_timed': busy,
           'cpu_bound': busy is not None and busy >= CPU_BOUND and not straggler}
    if straggler:
        cpu['straggler'] = straggler
    return cpu


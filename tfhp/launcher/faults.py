"""Faults injected into a running job on this machine: a task killed or paused, its link down or
slowed, each for a stated time, each recorded.

Kinds (`KINDS`):
  kill       SIGKILL the task (it does not come back; `--max_restarts` may start the job again);
  pause      SIGSTOP it, SIGCONT after the fault's seconds (a hung process, then a live one);
  link_down  take its emulated link down, up again after the seconds (a cable pulled at the
             switch: its packets go nowhere, its connections stay and resume);
  slow_link  divide its emulated link's rate by the fault's factor, restored after the seconds
             (a NIC that renegotiated down, a congested port).

`parse` reads the launcher's `--inject=KIND:TASK@STEP[+SECONDS][xFACTOR]`; a `Schedule` fires
such faults once each, when the chief's progress log reaches their global step. An `Injector`
follows a job across its attempts (`attach` at each start, from `local_job.launch_job`'s
on_start) and records every fault it injects: its kind, task, attempt, time, the global step
it met, and how long it lasted. Imports no TensorFlow.
"""
import collections
import re
import signal
import threading
import time

from tfhp.launcher import background
from tfhp.launcher import progress_log

KINDS = ('kill', 'pause', 'link_down', 'slow_link')
NEEDS_LINKS = ('link_down', 'slow_link')

# A fault to inject: its kind, task ((job, index)), the global step that triggers it (None: at
# once), how long it lasts in seconds (None: for the rest of the attempt) and a slow link's
# factor.
Fault = collections.namedtuple('Fault', ['kind', 'task', 'at_step', 'for_s', 'factor'])

_SPEC = re.compile(r'^(?P<kind>[a-z_]+):(?P<job>ps|worker|controller)(?P<index>\d+)'
                   r'@(?P<step>\d+)(?:\+(?P<for_s>\d+(?:\.\d*)?))?(?:x(?P<factor>\d+(?:\.\d*)?))?$')


def parse(text):
    """The `Fault` of 'KIND:TASK@STEP[+SECONDS][xFACTOR]', e.g. 'link_down:worker1@20+3',
    'pause:ps0@15+2', 'slow_link:worker2@10+30x10', 'kill:worker1@15'.

    Raises:
      ValueError: naming --inject and the text, and what is wrong with it.
    """
    match = _SPEC.match(text.strip())
    if not match:
        raise ValueError('--inject=%s: use KIND:TASK@STEP[+SECONDS][xFACTOR], e.g. '
                         'link_down:worker1@20+3 (kinds: %s)' % (text, ', '.join(KINDS)))
    kind = match.group('kind')
    for_s = float(match.group('for_s')) if match.group('for_s') else None
    factor = float(match.group('factor')) if match.group('factor') else None
    if kind not in KINDS:
        raise ValueError('--inject=%s: no fault kind %r (kinds: %s)'
                         % (text, kind, ', '.join(KINDS)))
    if kind in ('pause', 'link_down') and not for_s:
        raise ValueError('--inject=%s: a %s needs +SECONDS, how long it lasts' % (text, kind))
    if (kind == 'slow_link') != (factor is not None) or (factor is not None and factor <= 1):
        raise ValueError('--inject=%s: a slow_link, and only it, takes xFACTOR > 1, the rate '
                         'divisor' % text)
    return Fault(kind, (match.group('job'), int(match.group('index'))),
                 int(match.group('step')), for_s, factor)


def check(faults, tasks, on_links, colocated_ps=False):
    """Raises ValueError, naming the fault, when one cannot be injected into this job
    (colocated_ps: its ps tasks share their workers' NICs, `--colocate_ps`)."""
    for fault in faults:
        name = '%s:%s%d' % ((fault.kind,) + fault.task)
        if fault.task not in tasks:
            raise ValueError('--inject=%s...: the job has no %s %d' % ((name,) + fault.task))
        if fault.kind in NEEDS_LINKS and not on_links:
            raise ValueError('--inject=%s...: a %s needs emulated links (--link_bandwidth)'
                             % (name, fault.kind))
        if fault.kind in NEEDS_LINKS and colocated_ps and fault.task[0] == 'ps':
            raise ValueError('--inject=%s...: with --colocate_ps ps %d has no NIC of its own '
                             '(it shares worker %d\'s); fault that worker\'s link'
                             % (name, fault.task[1], fault.task[1]))


class Injector:
    """Injects faults into the current attempt of a job and records each one.

    Args:
      say: called with a line for each fault injected and ended.
      clock: monotonic seconds.
    Attributes:
      pids: of every task of every attempt.
      attempt_starts: (seconds since the first attempt started, the progress log's size) of
        each attempt as it started: its log lines come after that offset.
      records: one dict per fault injected: kind, task ('worker 1'), attempt (from 1),
        at_s (seconds since the first attempt started), global_step (the chief's, when
        known), for_s, factor and ended_s (when its end was applied; None while it lasts or
        for a kill).
    """

    def __init__(self, say=print, clock=time.monotonic):
        self._say, self._clock = say, clock
        self._lock = threading.Lock()
        self._processes, self._network = {}, None
        self._attempt, self._started = 0, None
        self._timers = []
        self.records = []
        self.progress_path = None
        self.pids = []  # of every task of every attempt
        self.attempt_starts = []

    def attach(self, processes, network):
        """The tasks ({(job, index): Popen}) and network (an EmulatedNetwork or None) of the
        attempt that just started."""
        with self._lock:
            self._processes, self._network = dict(processes), network
            self._attempt += 1
            self._started = self._started or self._clock()
            self.attempt_starts.append((self._clock() - self._started,
                                        progress_log.size(self.progress_path)))
            self.pids.extend(proc.pid for proc in processes.values())

    def detach(self):
        """The attempt ended: ends every fault still on (a paused task is continued, so that it
        can be stopped), and forgets the attempt's tasks and network."""
        for timer in list(self._timers):
            timer.cancel()
            timer.function()  # once only: each end is idempotent (`_ending`)
        with self._lock:
            self._timers = []
            self._processes, self._network = {}, None

    def logged_step(self):
        """The chief's last global step in this job's lines of the progress log (a log given
        by --progress_file may hold an earlier job's), or None."""
        path = self.progress_path
        with self._lock:
            if not self.attempt_starts or progress_log.size(path) <= self.attempt_starts[0][1]:
                return None
        return progress_log.last_step(path)

    @property
    def started(self):
        """When the first attempt started (the clock's reading; None before)."""
        return self._started

    def inject(self, kind, task, for_s=None, factor=None):
        """Injects one fault into the current attempt now; returns its record, or None when
        the task is not running (an attempt ending or not yet started)."""
        task = tuple(task)
        step = self.logged_step()
        with self._lock:
            proc, network = self._processes.get(task), self._network
            if proc is None or proc.poll() is not None:
                return None
            record = {'kind': kind, 'task': '%s %d' % task, 'attempt': self._attempt,
                      'at_s': round(self._clock() - self._started, 3),
                      'global_step': step,
                      'for_s': for_s, 'factor': factor, 'ended_s': None}
            end = self._start(kind, task, proc, network, factor)
            self.records.append(record)
        self._say('injected %s into %s%s' % (
            kind, record['task'], ' for %g s' % for_s if for_s else ''))
        if end and for_s:
            timer = threading.Timer(for_s, self._ending(record, end))
            timer.daemon = True
            self._timers.append(timer)
            timer.start()
        return record

    def _ending(self, record, end):
        """The fault's end, to run once, from its timer or from `detach`, whichever is first."""
        once = threading.Lock()

        def finish():
            if not once.acquire(blocking=False):
                return
            try:
                end()
            except (OSError, RuntimeError):  # the attempt's network or task is gone already
                pass
            record['ended_s'] = round(self._clock() - self._started, 3)
            self._say('ended %s of %s' % (record['kind'], record['task']))
        return finish

    @staticmethod
    def _start(kind, task, proc, network, factor):
        """Starts the fault; returns the function that ends it (None for a kill)."""
        if kind == 'kill':
            proc.send_signal(signal.SIGKILL)
            return None
        if kind == 'pause':
            proc.send_signal(signal.SIGSTOP)
            return lambda: proc.send_signal(signal.SIGCONT)
        if network is None:
            raise ValueError('a %s needs emulated links' % kind)
        if kind == 'link_down':
            network.set_link(task, False)
            return lambda: network.set_link(task, True)
        rate = network.rate_bps(task)
        network.set_rate(task, rate / factor)
        return lambda: network.set_rate(task, rate)


class Schedule(background.Background):
    """Fires step-triggered faults (`parse`) through an injector, each once, when the chief's
    progress log reaches their global step; a thread polls it while the job runs.

    Use as a context manager around the job.
    """

    def __init__(self, faults, injector, poll_s=0.05):
        self._pending = sorted(faults, key=lambda f: f.at_step)
        self._injector, self._poll_s = injector, poll_s
        super().__init__()

    def _run(self):
        while self._pending and not self._done.wait(self._poll_s):
            step = self._injector.logged_step()
            while self._pending and step is not None and step >= self._pending[0].at_step:
                fault = self._pending[0]
                if not self._injector.inject(fault.kind, fault.task, fault.for_s, fault.factor):
                    break  # the task is not up (yet): try again at the next poll
                self._pending.pop(0)

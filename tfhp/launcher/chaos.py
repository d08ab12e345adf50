"""Chaos for a job on this machine: random faults of random tasks at random times, for a bounded
time, and a watch of what the job must keep through them.

`Chaos` injects, through a `faults.Injector`, one fault every uniform(*interval_s) seconds from
the job's first step until duration_s has passed or `count` faults were injected: a kind at a
time from shuffled rounds of the kinds (so that every kind comes up as often), a task at random,
and for a pause, a link down or a slow link a length of uniform(*for_s) seconds. A fault that finds its task not
running (the job restarting) is tried again a second later.

`Watch` samples the chief's progress log and the latest checkpoint's step while the job runs;
`step_went_back` says, from them and the log, whether an attempt resumed from behind a checkpoint
it had (the one thing recovery must never do), and `checkpoint_went_back` whether the latest
checkpoint ever moved back. Imports no TensorFlow.
"""
import random
import time

from tfhp.launcher import background
from tfhp.launcher import progress_log
from tfhp.launcher import recovery

LASTING = ('pause', 'link_down', 'slow_link')  # faults with a length; a kill has none
_RETRY_S = 1.0
_POLL_S = 0.1  # how often the job's first step is looked for


class Chaos(background.Background):
    """Random faults into a running job, from a thread; use as a context manager around it.

    Args:
      injector: the job's `faults.Injector`.
      tasks: the (job, index) tasks to pick from.
      kinds: fault kinds to draw (`faults.KINDS`; a slow_link gets `factor`).
      interval_s: (low, high) seconds between faults.
      for_s: (low, high) seconds a pause, a link down or a slow link lasts.
      duration_s: no fault starts after this many seconds from the job's first step.
      count: the most faults (None: no limit).
      seed: of the draws.
      factor: a slow link's rate divisor.
    """

    def __init__(self, injector, tasks, kinds, interval_s, for_s, duration_s, count=None,
                 seed=0, factor=10.0):
        self._injector, self._tasks, self._kinds = injector, list(tasks), list(kinds)
        self._interval_s, self._for_s = interval_s, for_s
        self._duration_s, self._count, self._factor = duration_s, count, factor
        self._random = random.Random(seed)
        self._round = []
        super().__init__()

    def plan(self):
        """The next fault's (wait in seconds, kind, task, for_s)."""
        if not self._round:
            self._round = self._random.sample(self._kinds, len(self._kinds))
        kind = self._round.pop()
        return (self._random.uniform(*self._interval_s), kind,
                self._random.choice(self._tasks),
                round(self._random.uniform(*self._for_s), 1) if kind in LASTING else None)

    def _run(self):
        # The first fault finds a job that trains: one hit while it starts only shows that
        # TensorFlow's import can be interrupted. duration_s counts from then, so a start slowed
        # by busy cores does not use up the time the faults have (the job's end ends the wait).
        while progress_log.last_step(self._injector.progress_path) is None:
            if self._done.wait(_POLL_S):
                return
        deadline = time.monotonic() + self._duration_s
        injected = 0
        while self._count is None or injected < self._count:
            wait, kind, task, for_s = self.plan()
            if self._done.wait(wait) or time.monotonic() > deadline:
                return
            factor = self._factor if kind == 'slow_link' else None
            while not self._injector.inject(kind, task, for_s, factor):
                if self._done.wait(_RETRY_S) or time.monotonic() > deadline:
                    return
            injected += 1



class Watch(background.Background):
    """Samples (time.monotonic(), the chief's last global step, the latest checkpoint's step)
    every `every_s` from a thread while the job runs; use as a context manager around it.

    Attributes:
      samples: the samples, in order.
    """

    def __init__(self, progress_path, train_dir, every_s=0.2):
        self._progress_path, self._train_dir, self._every_s = progress_path, train_dir, every_s
        super().__init__()
        self.samples = []

    def _run(self):
        while True:
            self.samples.append((time.monotonic(),
                                 progress_log.last_step(self._progress_path),
                                 recovery.checkpoint_step(self._train_dir)))
            if self._done.wait(self._every_s):
                return

    def checkpoint_went_back(self):
        """Whether the latest checkpoint's step ever decreased."""
        steps = [checkpoint for _, _, checkpoint in self.samples]
        return any(later < earlier for earlier, later in zip(steps, steps[1:]))

    def step_went_back(self, injector):
        """The attempts whose first global step was behind the latest checkpoint that existed
        when they started: [(attempt, its first global step, that checkpoint's step)].

        Args:
          injector: the job's `faults.Injector` (when each attempt started, and where in the
            progress log its lines begin).
        """
        behind = []
        for number, (started, offset) in enumerate(injector.attempt_starts[1:], 2):
            entries = progress_log.read(self._progress_path, start=offset)
            # No checkpoint is written between attempts, so the last one sampled before the
            # attempt started is the one it had to resume from.
            checkpoint = max([c for t, _, c in self.samples if t <= injector.started + started]
                             or [0])
            if entries and entries[0][0] < checkpoint:
                behind.append((number, entries[0][0], checkpoint))
        return behind

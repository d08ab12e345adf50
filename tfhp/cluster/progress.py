"""A between-graph worker's way through its job's steps, in plain Python (no TensorFlow).

`JobProgress` takes the job's control values ([global step, end step, stop]) that every step
fetches and decides when the worker's warm-up and its timed steps end; `LoopOutcome` is what
its loop leaves for the worker's result; `timed_counts` splits the worker's counts into its
warm-up's and its timed steps'. The worker (`tfhp.cluster.worker`) runs the steps; this module
only counts, so its decisions can be checked without a cluster.
"""
import dataclasses
import time
from typing import Any, Dict, List, Optional

from tfhp import counts


class JobProgress:
    """The job's control values as this worker's steps read them, and when its loop ends.

    Synchronous workers (`common_end`) end at the job's end step, and warm up until its timed
    part starts (the end step - num_batches); asynchronous ones run num_warmup + num_batches
    steps of their own. Both end early when a task of the job asked to stop: a synchronous
    worker that sees the stop first moves the end step down (`move_end`, by
    `control.STOP_MARGIN`), an asynchronous one stops after its step.

    Args:
      initial: [global step, end step, stop] read before the first step.
      common_end: whether the workers end at one global step (synchronous) or each after its
        own number of steps.
      num_warmup: --num_warmup_batches.
      num_batches: --num_batches.
      move_end: move_end() moves the job's end step down after a stop.
      stop: this task's stop signal state: `stop.requested` is True once it got one.
      announce: announce(stop value, global step) logs the first stop this worker sees.
      clock: the wall clock (epoch seconds) of the step times.

    Attributes:
      step, end, stopped: the last control values read.
      start_step: the global step before the first step.
      warm_step: the global step when the timed steps began (None before).
      warmup_steps: the warm-up steps taken.
      end_times: the wall-clock time after each timed step.
      global_steps: the global step after each timed step.
      first_step_time: the wall-clock time after the first step, warm-up or timed (or None).
      timed_start_time: the wall-clock time the timed steps began (None before).
      first_loss, last_loss: the loss of the first and the last timed step (None before).
    """

    def __init__(self, initial, common_end, num_warmup, num_batches, move_end, stop, announce,
                 clock=time.time):
        self.step, self.end, self.stopped = (int(v) for v in initial)
        self._common_end = common_end
        self._num_warmup = num_warmup
        self._num_batches = num_batches
        self._move_end = move_end
        self._stop = stop
        self._announce = announce
        self._clock = clock
        self.start_step = self.step
        self.warm_step = None
        self.warmup_steps = 0
        self.end_times = []
        self.global_steps = []
        self.first_step_time = None
        self.timed_start_time = None
        self.first_loss = self.last_loss = None

    @property
    def timed_limit(self):
        """The most timed steps: None for a synchronous worker (the end step says)."""
        return None if self._common_end else self._num_batches

    def update(self, control_values):
        """Takes the [global step, end, stop] a step fetched."""
        first_stop = control_values[2] and not self.stopped
        self.step, self.end, self.stopped = (int(v) for v in control_values)
        if first_stop:
            self._announce(self.stopped, self.step)
            if self._common_end:
                self._move_end()

    def more(self, count, limit):
        """Whether another step runs after `count` steps of a phase of at most `limit`."""
        if self._common_end:
            return self.step < self.end and (limit is None or count < limit)
        return count < limit and not (self.stopped or self._stop.requested)

    def warm_more(self):
        """Whether another warm-up step runs; a synchronous worker's warm-up also ends where
        the job's timed part starts (another worker may have warmed it up already)."""
        return self.more(self.warmup_steps, self._num_warmup) and not (
            self._common_end and self.step >= self.end - self._num_batches)

    def after_warm_step(self, control_values):
        """Takes a warm-up step's control values; returns whether the warm-up ends."""
        self.update(control_values)
        self.warmup_steps += 1
        if self.first_step_time is None:
            self.first_step_time = self._clock()
        return not self.warm_more()

    def start_timed(self):
        """Marks the start of the timed steps; returns whether one runs at all."""
        self.warm_step = self.step
        self.timed_start_time = self._clock()
        return self.more(0, self.timed_limit)

    def after_timed_step(self, control_values, loss=None):
        """Takes a timed step's control values (and its loss, if given); returns whether the
        timed steps end."""
        if loss is not None:
            self.last_loss = float(loss)
            if self.first_loss is None:
                self.first_loss = self.last_loss
        self.update(control_values)
        self.end_times.append(self._clock())
        self.global_steps.append(self.step)
        if self.first_step_time is None:
            self.first_step_time = self.end_times[-1]
        return not self.more(len(self.end_times), self.timed_limit)

    def settled(self):
        """The last timed step ends now: once the work it left beside it (priority pushes:
        its pushes and applies) is done, or the timed window would leave that out."""
        if self.end_times:
            self.end_times[-1] = self._clock()


@dataclasses.dataclass(frozen=True)
class LoopOutcome:
    """What a worker's warm-up and timed steps leave for its result (`worker._train_loop`)."""
    times: Any  # the timed steps' `timing.StepTimes` (None: no timed step ran)
    end_times: List[float]  # the wall-clock time after each timed step
    global_steps: List[int]  # the global step after each timed step
    timed_start_time: float  # the wall-clock time the timed steps began
    first_step_time: Optional[float]  # after the first step, warm-up or timed (None: none)
    warm_global_step: int  # the global step when the timed steps began
    start_global_step: int  # the global step before the first step
    warmup_steps: int  # the warm-up steps taken
    warmup_counters: Dict[str, int]  # the manager's counts after the warm-up (counts.values)
    first_loss: Optional[float]  # the loss of the first timed step (None: no timed step)
    last_loss: Optional[float]  # the loss of the last timed step (None: no timed step)


def timed_counts(end, warm):
    """A worker's counts split into its timed steps' and its warm-up's (`warmup_<name>`), with
    the staleness figures of its timed updates (`counts.summary`) where it measures them.

    Args:
      end: {name: count} read after the last step (`counts.values`).
      warm: the same, read after the warm-up.
    Returns:
      {name: timed count, 'warmup_<name>': warm-up count (but the max), and the summary's}.
    """
    timed = counts.difference(end, warm)
    split = dict(timed, **{'warmup_' + name: value for name, value in warm.items()
                           if name != counts.MAX})
    split.update(counts.summary(timed))
    return split

"""Step timings and their summary figures; a figure over repeated runs; JSON result lines.
Pure Python, no TensorFlow."""
import collections
import dataclasses
import json
import math
import os
import statistics
import threading


def percentile(values, q):
    """The q-th percentile (0..100) of `values`, linear interpolation between ranks."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError('percentile of no values')
    rank = (len(ordered) - 1) * q / 100.0
    low, high = int(math.floor(rank)), int(math.ceil(rank))
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def _spread(values):
    mean = sum(values) / len(values)
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / len(values))
    return {'mean': mean, 'std': std, 'p50': percentile(values, 50),
            'p90': percentile(values, 90)}


class StepTimes:
    """Durations of timed steps, and the wall time of the whole timed loop.

    Args:
      durations: seconds of each `session.run`.
      wall_time: seconds from the start of the first step to the end of the last, including
        everything the loop did between runs (so `images_per_sec` is what a user gets).
      images_per_step: images every step consumed (the global batch).
    """

    def __init__(self, durations, wall_time, images_per_step):
        if not durations:
            raise ValueError('StepTimes needs at least one step')
        self.durations = list(durations)
        self.wall_time = wall_time
        self.images_per_step = images_per_step

    @classmethod
    def concat(cls, parts):
        """One StepTimes from consecutive runs of the same step (wall times added)."""
        return cls([d for p in parts for d in p.durations], sum(p.wall_time for p in parts),
                   parts[0].images_per_step)

    @property
    def num_steps(self):
        return len(self.durations)

    @property
    def images_per_sec(self):
        """Total images/sec over the timed loop."""
        return self.num_steps * self.images_per_step / self.wall_time

    def step_time_ms(self):
        """mean, std, p50, p90 of step time in milliseconds."""
        return _spread([d * 1000.0 for d in self.durations])

    def images_per_sec_spread(self):
        """mean, std, p50, p90 of per-step images/sec."""
        return _spread([self.images_per_step / d for d in self.durations])

    def summary(self):
        """A JSON-ready dict of the figures."""
        return {'images_per_sec': self.images_per_sec,
                'images_per_sec_spread': self.images_per_sec_spread(),
                'step_time_ms': self.step_time_ms(),
                'num_steps': self.num_steps,
                'wall_time_s': self.wall_time}


@dataclasses.dataclass(frozen=True)
class Range:
    """One figure over repeated runs: its median, least and greatest value, and how many runs.

    The studies' median [min-max] (experiments/stats.py, which also handles targets not
    reached) for library code, which must not import experiments/.
    """
    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values):
        """The Range of one or more numbers."""
        values = list(values)
        if not values:
            raise ValueError('a range of no values')
        return cls(statistics.median(values), min(values), max(values), len(values))

    def text(self, fmt='%g', scale=1.0):
        """'median [min\u2013max]', each number `fmt % (value * scale)`; the median alone for
        one run."""
        median = fmt % (self.median * scale)
        if self.n == 1:
            return median
        return '%s [%s\u2013%s]' % (median, fmt % (self.low * scale), fmt % (self.high * scale))


class PassTally:
    """Seconds spent in passes of something, from several threads, stage by stage: e.g. the
    waits of this process's emulated towers as they happened (`EMULATED_COMPUTE`; a tower's
    forward pass and its backward pass each count once, at their first wait)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._seconds = collections.Counter()
        self._passes = collections.Counter()

    def add(self, seconds, new_pass, stage=''):
        """Adds `seconds` to `stage`; new_pass: they begin one of its passes."""
        with self._lock:
            self._seconds[stage] += seconds
            self._passes[stage] += int(new_pass)

    def reset(self):
        """Forgets every pass so far (a new run's tally starts here)."""
        with self._lock:
            self._seconds.clear()
            self._passes.clear()

    def per_pass_s(self):
        """The mean seconds of a pass of each stage, added over the stages (None before any
        pass). Each stage is meaned over its own passes: forward passes with no backward (a
        final loss, an inference run) do not dilute the forward-and-backward time."""
        with self._lock:
            if not self._passes:
                return None
            return sum(self._seconds[stage] / passes for stage, passes in self._passes.items()
                       if passes)


# The emulated compute of this process (`tfhp.emulation.model`).
EMULATED_COMPUTE = PassTally()


def append_json(path, record):
    """Appends `record` as one JSON line to `path`, creating its directory if needed."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, 'a') as f:
        f.write(json.dumps(record, sort_keys=True) + '\n')

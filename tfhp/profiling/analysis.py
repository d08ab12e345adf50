"""Figures of one traced step: where its time went, per device, per stage and along its path.

Definitions (all times in microseconds, from one step's RunMetadata):
  step time      first op start to last op end, over every device.
  busy(d)        the union of device d's op intervals; idle(d) = step time - busy(d);
                 imbalance = max busy / mean busy - 1.
  stage time     each instant of busy(d) is split evenly among the ops running then, and each
                 op's share goes to its stage, so a device's stage times add up to busy(d).
  self time      an op's share, as above (its time not shared with concurrent ops).
  critical path  from the op that ended last, repeatedly the input that finished last: the
                 chain that released the end of the step. Its time splits into running and
                 `wait` (an input's end to its consumer's start: scheduling, or a transfer when
                 the devices differ), which add up to the path's span.
  transfers      cross-device tensors with their windows (see `events`); `hidden` is the part
                 of their union during which some non-transfer op was running.
  overlap efficiency  eta = (sum busy - U) / (sum busy - max busy) over the devices, with U the
                 time some device was busy (the union of every device's busy time): 1 when
                 the step costs only its busiest device, 0 when devices ran one after another
                 (None with fewer than two busy devices). Stretches where no device ran are
                 neither overlap nor turns, so they are left out: with the step time in place
                 of U, a warm-up trace of a few short ops far apart gave eta = -102.74.
  other share    the self time of ops under no stage scope (`events.OTHER`) over the busy time
                 summed over devices; `other_ops` are the largest of them by self time.
  input share    the input and preprocess stages' self time over the busy time summed over
                 devices (the RecordInput pipeline's per-image ops run in the step's pools).
  input wait     the union of the step's iterator GetNext ops: tf.data preprocesses on threads
                 of its own, which the trace does not show, so the time a step blocks taking a
                 batch from it is all of tf.data's work a trace holds.
"""
import collections
import dataclasses
from typing import Dict, List, Optional, Tuple

from tfhp.ops import scopes
from tfhp.profiling import events
from tfhp.profiling import intervals

# The stages that make a step's input, and the op types that take a batch from tf.data.
INPUT_STAGES = (scopes.INPUT, scopes.PREPROCESS)
GET_NEXT_TYPES = frozenset(['IteratorGetNext', 'IteratorGetNextSync',
                            'MultiDeviceIteratorGetNextFromShard'])


@dataclasses.dataclass(frozen=True)
class DeviceFigures:
    device: str
    busy: float
    idle: float
    stages: Dict[str, float]    # stage -> self time on this device
    num_ops: int


@dataclasses.dataclass(frozen=True)
class PathSegment:
    """Consecutive critical-path ops of one stage on one device."""
    device: str
    stage: str
    busy: float   # how far they moved the path on while running
    wait: float   # gaps before them (scheduling or transfer)
    num_ops: int


@dataclasses.dataclass(frozen=True)
class TopOp:
    name: str
    type: str
    device: str
    stage: str
    self_time: float
    duration: float


@dataclasses.dataclass(frozen=True)
class StepAnalysis:
    """Everything `analyze` computes; `to_dict` gives a JSON-ready form."""
    step_time: float
    stage_names: Tuple[str, ...]
    devices: List[DeviceFigures]
    critical_path: List[PathSegment]
    links: Dict[str, Tuple[int, int]]   # 'src->dst' -> (number of tensors, bytes)
    transfer_time: float                # union of transfer windows and copy ops
    hidden_transfer_time: float         # part of it overlapped by compute
    overlap_efficiency: Optional[float]
    top_ops: List[TopOp]
    # The ops of no stage with the most self time (empty when a caller builds the figures
    # without ops, as the bottleneck tests do).
    other_ops: List[TopOp] = dataclasses.field(default_factory=list)
    input_wait: float = 0.0            # union of the iterator GetNext ops (module docstring)

    @property
    def input_share(self):
        """Fraction of the busy time (summed over devices) in the input and preprocess
        stages."""
        busy = sum(d.busy for d in self.devices)
        totals = self.stage_totals()
        return sum(totals.get(s, 0.0) for s in INPUT_STAGES) / busy if busy else 0.0

    @property
    def path_input_time(self):
        """Time the critical path spent in (and waiting before) input and preprocess ops."""
        return sum(s.busy + s.wait for s in self.critical_path if s.stage in INPUT_STAGES)

    @property
    def other_share(self):
        """Fraction of the busy time (summed over devices) that fell in no stage."""
        busy = sum(d.busy for d in self.devices)
        return self.stage_totals().get(events.OTHER, 0.0) / busy if busy else 0.0

    @property
    def transfer_bytes(self):
        return sum(num_bytes for _, num_bytes in self.links.values())

    @property
    def overlap_percent(self):
        """Share of transfer time hidden behind compute (None when nothing was transferred)."""
        if not self.transfer_time:
            return None
        return 100.0 * self.hidden_transfer_time / self.transfer_time

    @property
    def imbalance(self):
        """How far the busiest device's busy time is above the mean (0: balanced)."""
        mean = sum(d.busy for d in self.devices) / len(self.devices)
        return max(d.busy for d in self.devices) / mean - 1.0 if mean else 0.0

    @property
    def exposed_transfer_time(self):
        return self.transfer_time - self.hidden_transfer_time

    def stage_totals(self):
        """{stage: self time summed over devices}."""
        totals = collections.Counter()
        for device in self.devices:
            totals.update(device.stages)
        return dict(totals)

    def to_dict(self):
        result = dataclasses.asdict(self)
        result.update(input_share=self.input_share, path_input_time=self.path_input_time,
                      transfer_bytes=self.transfer_bytes, overlap_percent=self.overlap_percent,
                      exposed_transfer_time=self.exposed_transfer_time,
                      imbalance=self.imbalance, other_share=self.other_share)
        return result


def stage_names(stages=scopes.STAGES):
    """Every stage an op can be attributed to, in report order."""
    return tuple(stages) + events.TRANSFER_STAGES + (events.OTHER,)


def analyze(run_metadata, stages=scopes.STAGES, top=10):
    """Analyses one traced step.

    Args:
      run_metadata: a `RunMetadata` from a FULL_TRACE run (see `tfhp.session.run_traced`).
      stages: stage names recognised in op names.
      top: how many ops to list by self time, overall and among the ops of no stage.
    Returns:
      A `StepAnalysis`.
    Raises:
      ValueError: the metadata holds no step stats (the run was not traced).
    """
    trace = events.parse(run_metadata, stages)
    ops = trace.ops
    if not ops:
        raise ValueError('the RunMetadata holds no step stats; run the step with '
                         'RunOptions(trace_level=FULL_TRACE)')
    step_start = min(op.start for op in ops)
    step_time = max(op.end for op in ops) - step_start

    shares = [0.0] * len(ops)
    by_device = collections.defaultdict(list)
    for index, op in enumerate(ops):
        by_device[op.device].append(index)
    devices = []
    for device in sorted(by_device):
        indices = by_device[device]
        stage_time = dict.fromkeys(stage_names(stages), 0.0)
        for index, share in zip(indices, intervals.fair_shares(
                [(ops[k].start, ops[k].end) for k in indices])):
            shares[index] = share
            stage_time[ops[index].stage] += share
        busy = sum(stage_time.values())
        devices.append(DeviceFigures(device, busy, step_time - busy, stage_time, len(indices)))

    windows = [(t.start, t.end) for t in trace.transfers
               if t.start is not None and t.end is not None]
    transfer = windows + [(op.start, op.end) for op in ops
                          if op.stage in events.TRANSFER_STAGES]
    compute = [(op.start, op.end) for op in ops if op.stage not in events.TRANSFER_STAGES]

    links = collections.defaultdict(lambda: (0, 0))
    for t in trace.transfers:
        count, num_bytes = links['%s->%s' % (t.src, t.dst)]
        links['%s->%s' % (t.src, t.dst)] = (count + 1, num_bytes + t.bytes)

    by_share = sorted(range(len(ops)), key=lambda k: -shares[k])
    other = [k for k in by_share if ops[k].stage == events.OTHER]
    return StepAnalysis(
        step_time=step_time,
        stage_names=stage_names(stages),
        devices=devices,
        critical_path=_critical_path(ops),
        links=dict(links),
        transfer_time=intervals.length(transfer),
        hidden_transfer_time=intervals.overlap(transfer, compute),
        overlap_efficiency=overlap_efficiency(
            [[(ops[k].start, ops[k].end) for k in by_device[d]] for d in sorted(by_device)]),
        top_ops=[_top_op(ops[k], shares[k]) for k in by_share[:top]],
        other_ops=[_top_op(ops[k], shares[k]) for k in other[:top]],
        input_wait=intervals.length([(op.start, op.end) for op in ops
                                     if op.type in GET_NEXT_TYPES]))


def _top_op(op, self_time):
    return TopOp(op.name, op.type, op.device, op.stage, self_time, op.end - op.start)


def overlap_efficiency(device_intervals):
    """eta = (sum B - U) / (sum B - max B), in [0, 1] (see the module docstring).

    Args:
      device_intervals: per device, the (start, end) intervals of its ops.
    Returns:
      eta, or None when fewer than two devices were busy.
    """
    busy_times = [b for b in map(intervals.length, device_intervals) if b > 0]
    denominator = sum(busy_times) - max(busy_times, default=0.0)
    if len(busy_times) < 2 or denominator <= 0:
        return None
    busy_span = intervals.length([i for device in device_intervals for i in device])
    # U lies between max B and sum B; the clamp only absorbs float rounding.
    return min(1.0, max(0.0, (sum(busy_times) - busy_span) / denominator))


def _critical_path(ops):
    """Walks back from the last op through the last-finishing inputs; returns PathSegments."""
    executed = {op.name: op for op in ops if not op.gpu_trace}
    if not executed:
        return []
    path = [max(executed.values(), key=lambda op: op.end)]
    seen = {path[0].name}
    while True:
        # An input's recorded end may fall a little after its consumer's start: the executor
        # closes an op's record only after it has handed its outputs on.
        ready = [executed[name] for name in path[-1].inputs
                 if name in executed and name not in seen]
        if not ready:
            break
        path.append(max(ready, key=lambda op: op.end))
        seen.add(path[-1].name)
    path.reverse()

    # Each op adds the time from where the path had got to (its frontier) to its own end,
    # split into waiting before it starts and running; so the segments add up to the span.
    segments, frontier = [], path[0].start
    for op in path:
        wait = max(0.0, op.start - frontier)
        busy = max(0.0, op.end - max(op.start, frontier))
        frontier = max(frontier, op.end)
        if segments and (segments[-1].device, segments[-1].stage) == (op.device, op.stage):
            last = segments[-1]
            segments[-1] = PathSegment(op.device, op.stage, last.busy + busy, last.wait + wait,
                                       last.num_ops + 1)
        else:
            segments.append(PathSegment(op.device, op.stage, busy, wait, 1))
    return segments

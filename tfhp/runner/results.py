"""The one result record of every run: one process, an in-graph client, a between-graph worker.

`Result` lists the record's fields once, in groups: what ran where (`Setup`), the task
(`Task`), the whole configuration, the timed steps' figures (`Figures`), what the run's loop
reported (`Outcome`: losses, accuracies, checkpoints), what the variable manager counted
(`Counters`: dropped gradients, staleness; a worker's also for its warm-up), what a
between-graph worker adds (`Worker`: the times the launcher's job figures need), and the
environment (`Environment`). Its JSON form (`Result.to_json`) is one flat dict, one key per
field (a warm-up counter's prefixed `warmup_`); a field whose default is None is left out while
it is None, so a record holds only what its run measured. Experiments, tests and the
launcher's job figures read that dict (`Result.from_dict` reads it back).

Adding a field to the record: a field here, its value where the run computes it, and a test.
"""
import dataclasses
import platform
import time
from typing import Any, Dict, List, Optional

import tensorflow.compat.v1 as tf

import tfhp
from tfhp import timing

# mean, std, p50 and p90 of per-step values (`timing.StepTimes`).
Spread = Dict[str, float]


def mode(cfg):
    """What a run does: 'train', 'eval', 'forward_only' or 'input_only'."""
    if cfg.data.input_only:
        return 'input_only'
    return 'eval' if cfg.run.eval else 'forward_only' if cfg.run.forward_only else 'train'


@dataclasses.dataclass
class Setup:
    """What ran where."""
    mode: str  # `mode`
    model: str
    batch_size: int  # per tower
    images_per_step: int  # every tower's
    image_size: int
    num_devices: int  # towers
    num_params: int  # trainable parameters
    compute_dtype: str


@dataclasses.dataclass
class Task:
    """The task that wrote the record: job_name '' (task 0) for one process."""
    job_name: str
    task_index: int


@dataclasses.dataclass
class Figures:
    """The timed steps' figures (`timing.StepTimes.summary`); a run that timed no step (a worker
    that joined its job at the end) has 0 steps, 0.0 images/sec and none of the others."""
    num_steps: int = 0
    images_per_sec: float = 0.0  # every timed image over the timed loop's wall time
    images_per_sec_spread: Optional[Spread] = None  # of per-step images/sec
    step_time_ms: Optional[Spread] = None
    wall_time_s: Optional[float] = None
    # --emulated_compute: one tower pass's waits as they happened (warm-up included), to set
    # beside the profile's compute time (`timing.EMULATED_COMPUTE`).
    emulated_compute_ms: Optional[float] = None


@dataclasses.dataclass
class Outcome:
    """What the run's loop reported (`tfhp.runner.loops`, a worker's final fetch); None: not
    measured in this mode."""
    final_loss: Optional[float] = None
    learning_rate: Optional[float] = None  # the rate of the step after the last (training)
    first_loss: Optional[float] = None  # a between-graph worker's first timed step's
    last_loss: Optional[float] = None  # and its last timed step's
    global_step: Optional[int] = None  # at the end; of the weights evaluated, for --eval
    checkpoints: Optional[List[List[float]]] = None  # [global step, timed seconds so far]
    evaluations: Optional[List[Dict[str, float]]] = None  # `evaluation.DuringTraining`'s
    train_top1: Optional[float] = None  # --print_training_accuracy: the last batch's
    train_top5: Optional[float] = None
    top_1_accuracy: Optional[float] = None  # --eval
    top_5_accuracy: Optional[float] = None
    replica_steps: Optional[List[int]] = None  # in-graph asynchronous replicas
    replica_images_per_sec: Optional[List[float]] = None
    skipped_records: Optional[int] = None  # corrupt input records skipped


@dataclasses.dataclass
class Counters:
    """What the variable manager counted (its `counters()`, `tfhp.counts`); None: it keeps no
    such counter. A worker's timed steps' (the last reading less the warm-up's) or its
    warm-up's."""
    dropped_gradients: Optional[int] = None  # late gradients the sync protocol dropped
    staleness_count: Optional[int] = None  # updates whose staleness was measured
    staleness_sum: Optional[int] = None
    staleness_max: Optional[int] = None
    staleness_mean: Optional[float] = None  # `counts.summary`
    stale_gradients_dropped: Optional[int] = None
    staleness_histogram: Optional[List[int]] = None  # `counts.BINS` bins


@dataclasses.dataclass
class Worker:
    """What a between-graph worker adds: wall-clock times are epoch seconds."""
    warmup_steps: int
    images: int  # of its timed steps
    dropped_images: int  # of its dropped timed gradients
    warmup_dropped_images: int
    session_start_time: float
    session_ready_time: float
    first_step_time: Optional[float]  # after its first step, warm-up or timed (None: none)
    timed_start_time: float
    end_times: List[float]  # after each timed step
    global_steps: List[int]  # after each timed step
    start_global_step: int  # before its first step
    global_steps_per_sec: float  # the job's global step rate over its timed steps
    variables_checksum: float  # of the variables at the end: equal on every worker
    variable_bytes_by_device: Dict[str, int]  # trainable variables' bytes per device
    stopped_by: Optional[int] = None  # the signal that stopped the job early
    # When it reached each phase of its start (`tfhp.startup.MARKS`: started, imported, peers,
    # graph); with session_ready_time and first_step_time, the launcher's start-up breakdown.
    startup_times: Optional[Dict[str, float]] = None
    # The cluster events it saw (`tfhp.cluster.events`): [{'time', 'event'}].
    events: Optional[List[Dict[str, Any]]] = None


@dataclasses.dataclass
class Environment:
    """Versions, host and local time of the run."""
    tfhp_version: str
    tf_version: str
    host: str
    time: str  # ISO 8601, to the second

    @classmethod
    def now(cls):
        """This process's environment, at this time."""
        return cls(tfhp.__version__, tf.__version__, platform.node(),
                   time.strftime('%Y-%m-%dT%H:%M:%S'))


def _group(cls, prefix='', **field_args):
    """A `Result` field holding a group `cls` whose fields are the record's keys (+ prefix)."""
    return dataclasses.field(metadata={'group': cls, 'prefix': prefix}, **field_args)


@dataclasses.dataclass
class Result:
    """The result record of a run (see the module doc). `to_json` is the record's JSON form."""
    setup: Setup = _group(Setup)
    task: Task = _group(Task)
    config: Dict[str, Any]  # `BenchmarkConfig.to_dict`
    environment: Environment = _group(Environment)
    figures: Figures = _group(Figures)
    outcome: Outcome = _group(Outcome, default_factory=Outcome)
    counters: Counters = _group(Counters, default_factory=Counters)
    warmup_counters: Counters = _group(Counters, 'warmup_', default_factory=Counters)
    worker: Optional[Worker] = _group(Worker, default=None)

    def to_json(self):
        """The record as one flat JSON-ready dict: {key: value}, keys as described in the
        module doc."""
        flat = {}
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if 'group' not in field.metadata:
                flat[field.name] = value
            elif value is not None:
                prefix = field.metadata['prefix']
                flat.update((prefix + f.name, getattr(value, f.name))
                              for f in dataclasses.fields(value)
                              if not (f.default is None and getattr(value, f.name) is None))
        return flat

    @classmethod
    def from_dict(cls, json_form):
        """The Result of a record's JSON form (`to_json`, e.g. a line of a --result_file).

        Raises:
          ValueError: a key is no field of the record.
          TypeError: a field that every record has is missing.
        """
        flat = dict(json_form)
        groups = {}
        for field in dataclasses.fields(cls):
            if 'group' not in field.metadata:
                value = flat.pop(field.name, None)
            else:
                value = take(field.metadata['group'], flat, field.metadata['prefix'])
            # Left out, a group takes its default (a required one raises TypeError).
            if value is not None:
                groups[field.name] = value
        if flat:
            raise ValueError('not fields of a result record: %s' % ', '.join(sorted(flat)))
        return cls(**groups)


def take(group_class, flat, prefix=''):
    """The `group_class` group (e.g. `Counters`) of the flat dict's keys named as its fields
    (with `prefix`), which are removed from `flat`; None when no such key is there."""
    names = [f.name for f in dataclasses.fields(group_class) if prefix + f.name in flat]
    if not names:
        return None
    return group_class(**{name: flat.pop(prefix + name) for name in names})


def record(cfg, built, times, **groups):
    """The record of a run of `built` (a `build.Built`) with config cfg.

    Args:
      cfg: the run's BenchmarkConfig.
      built: what `build.build` returned.
      times: the timed steps' `timing.StepTimes`, or None when the run timed no step (a worker
        that joined a job at its end).
      **groups: the run's other groups of `Result`: outcome, counters, warmup_counters, worker.
    Returns:
      A `Result`.
    """
    return Result(
        setup=Setup(mode=mode(cfg), model=built.model_name, batch_size=built.batch_size,
                    images_per_step=built.images_per_step, image_size=built.image_size,
                    num_devices=built.topology.num_towers, num_params=built.num_params,
                    compute_dtype=cfg.precision.dtype),
        task=Task(job_name=cfg.cluster.job_name, task_index=cfg.cluster.task_index),
        config=cfg.to_dict(), environment=Environment.now(),
        figures=_figures(cfg, times), **groups)


def _figures(cfg, times):
    figures = Figures(**times.summary()) if times else Figures()
    waited = timing.EMULATED_COMPUTE.per_pass_s() if cfg.model.emulated_compute else None
    if waited is not None:
        figures.emulated_compute_ms = 1000.0 * waited
    return figures


def log_figures(result, log):
    """Prints the figures of a `Result`'s timed steps (the 'total images/sec' block)."""
    figures = result.figures
    if not figures.num_steps:
        return
    spread, step_ms = figures.images_per_sec_spread, figures.step_time_ms
    log('-' * 64)
    log('total images/sec: %.2f (per step: mean %.2f std %.2f p50 %.2f p90 %.2f)' % (
        figures.images_per_sec, spread['mean'], spread['std'], spread['p50'], spread['p90']))
    log('step_time_ms: mean %.2f p50 %.2f p90 %.2f' % (step_ms['mean'], step_ms['p50'],
                                                       step_ms['p90']))
    log('-' * 64)


def write(cfg, result):
    """Appends a `Result`'s JSON form to --result_file, if set; returns that form."""
    json_form = result.to_json()
    if cfg.run.result_file:
        timing.append_json(cfg.run.result_file, json_form)
    return json_form

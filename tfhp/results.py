"""The one result record of every run: one process, an in-graph client, a between-graph worker.

A record holds the timed steps' figures (`timing.StepTimes.summary`: images/sec and its
spread, step times, steps, wall time), what the run counted (the caller's `extra`: losses,
accuracies, dropped gradients, staleness, a worker's timings), and what ran where: mode, model,
batch per tower, images per step (every tower's), image size, towers, parameters, compute
dtype, the task (empty for one process), the whole configuration, versions, host and time.
The launcher's job figures read workers' records; experiments read any.
"""
import platform
import time

import tensorflow.compat.v1 as tf

import tfhp
from tfhp import timing


def mode(cfg):
    """What a run does: 'train', 'eval', 'forward_only' or 'input_only'."""
    if cfg.data.input_only:
        return 'input_only'
    return 'eval' if cfg.run.eval else 'forward_only' if cfg.run.forward_only else 'train'


def record(cfg, built, times, extra):
    """The record of a run of `built` (a `benchmark.Built`) with config cfg.

    Args:
      cfg: the run's BenchmarkConfig.
      built: what `benchmark.build` returned.
      times: the timed steps' `timing.StepTimes`, or None when the run timed no step (a worker
        that joined a job at its end).
      extra: what the run counted, added as it is.
    Returns:
      A JSON-ready dict.
    """
    result = times.summary() if times else {'num_steps': 0, 'images_per_sec': 0.0}
    result.update(extra)
    result.update(
        mode=mode(cfg), model=built.model_name, batch_size=built.batch_size,
        images_per_step=built.images_per_step, image_size=built.image_size,
        num_devices=built.topology.num_towers, num_params=built.num_params,
        compute_dtype=cfg.precision.dtype, job_name=cfg.cluster.job_name,
        task_index=cfg.cluster.task_index, config=cfg.to_dict(),
        tfhp_version=tfhp.__version__, tf_version=tf.__version__, host=platform.node(),
        time=time.strftime('%Y-%m-%dT%H:%M:%S'))
    return result


def log_figures(result, log):
    """Prints the figures of a record's timed steps (the 'total images/sec' block)."""
    if not result['num_steps']:
        return
    spread, step_ms = result['images_per_sec_spread'], result['step_time_ms']
    log('-' * 64)
    log('total images/sec: %.2f (per step: mean %.2f std %.2f p50 %.2f p90 %.2f)' % (
        result['images_per_sec'], spread['mean'], spread['std'], spread['p50'], spread['p90']))
    log('step_time_ms: mean %.2f p50 %.2f p90 %.2f' % (step_ms['mean'], step_ms['p50'],
                                                       step_ms['p90']))
    log('-' * 64)


def write(cfg, result):
    """Appends the record to --result_file, if set; returns it."""
    if cfg.run.result_file:
        timing.append_json(cfg.run.result_file, result)
    return result

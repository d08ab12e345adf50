"""The benchmark runner: a BenchmarkConfig in, a graph built (`build`), steps timed, a result
dict out.

This is the library behind `python -m tfhp`; experiment scripts call `run(config)` directly.
It checks the configuration against the machine before building anything, builds the graph
(input -> towers -> variable manager), initialises or restores from `train_dir`, warms up, times
`num_batches` steps, checkpoints, and returns the figures (also appended to `result_file`).
"""
import contextlib
import dataclasses
import os

import tensorflow.compat.v1 as tf

from tfhp import config as config_lib
from tfhp import counts
from tfhp import session as session_lib
from tfhp import timing
from tfhp.data import errors as data_errors
from tfhp.profiling import graphs
from tfhp.runner import build
from tfhp.runner import evaluation
from tfhp.runner import loops
from tfhp.runner import resolve
from tfhp.runner import results


def _eval_config(cfg):
    """The configuration of the evaluation graph of cfg's evaluations during training."""
    return dataclasses.replace(
        cfg, replication=dataclasses.replace(cfg.replication, staged_vars=False,
                                             variable_consistency='strong'),
        # --eval's own check wants a checkpoint directory; this graph is restored by hand.
        run=dataclasses.replace(cfg.run, eval=True, train_dir=os.devnull, result_file=None,
                                save_model_steps=None, num_epochs=None),
        profile=config_lib.ProfileConfig(),
        # Evaluated in this process alone, a container client's (on a cluster) too.
        cluster=config_lib.ClusterConfig(),
        evaluation=dataclasses.replace(cfg.evaluation, eval_during_training_every_n_steps=None,
                                       eval_during_training_every_n_epochs=None,
                                       stop_at_top_1_accuracy=None))


def _evaluator(cfg, log):
    """The `evaluation.DuringTraining` of cfg, or None when it does not evaluate while
    training."""
    evaluation_cfg = cfg.evaluation
    if not evaluation_cfg.during_training:
        return None
    every = evaluation_cfg.eval_during_training_every_n_steps or resolve.steps_for_epochs(
        cfg, evaluation_cfg.eval_during_training_every_n_epochs)
    return evaluation.DuringTraining(
        build.build(_eval_config(cfg)), every, evaluation_cfg.num_eval_batches or cfg.run.num_batches,
        evaluation_cfg.stop_at_top_1_accuracy, log)


def run(cfg, log=print, topology=None, target='', container='', device_filters=()):
    """Runs one benchmark.

    Args:
      cfg: a `tfhp.config.BenchmarkConfig` (a cluster task runs through `tfhp.cluster.roles`,
        which calls this for the in-graph client).
      log: called with each line to print.
      topology, target: the in-graph client of a cluster (`tfhp.cluster.client`) passes its
        cluster-wide topology and its server's session target.
      container, device_filters: a client in a container (`tfhp.cluster.container_client`):
        its graph's resource container (`build`) and the tasks its session talks to.
    Returns:
      The result dict (the JSON line appended to cfg.run.result_file, if set).
    Raises:
      tfhp.config.ConfigError: the configuration cannot work on this machine, an output path
        cannot be written, or a record of --data_dir is corrupt (the message names its file
        and index).
    """
    # Before any work: an unwritable --train_dir would otherwise fail at the final save.
    config_lib.check_output_paths(cfg, config_lib.writes_train_dir(cfg.cluster))
    cfg = resolve.resolve_classes(resolve.resolve_epochs(cfg))
    try:
        return _run_local(cfg, log, topology, target, container, device_filters)
    except tf.errors.OpError as e:
        corrupt = data_errors.describe_corrupt_input(
            cfg.data, e, 'train' if cfg.trains else 'validation', resolve.data_set(cfg))
        if corrupt:
            raise config_lib.ConfigError(corrupt) from e
        raise


def _run_mode(sess, built, cfg, log, evaluator):
    """Runs cfg's mode on an initialised session; returns (StepTimes, {`results.Outcome`
    field: value})."""
    mode = results.mode(cfg)
    if mode == 'input_only':
        return loops.run_input_only(sess, built.ops, cfg.run)
    if mode in ('eval', 'forward_only'):
        session_lib.warm_up(sess, built.ops.warmup_ops)
        if mode == 'eval':
            return loops.run_eval(sess, built.ops,
                                  cfg.evaluation.num_eval_batches or cfg.run.num_batches, log)
        return loops.run_eval(sess, built.ops, cfg.run.num_batches, log,
                              num_warmup=cfg.run.num_warmup_batches, accuracy=False)
    if built.replica_train_ops:
        return loops.run_async(sess, built, cfg.run, log, cfg.staleness.async_warmup_steps)
    return loops.run_train(sess, built, cfg, log, evaluator)


def _counters(sess, built, log):
    """What the manager (`results.Counters`) and the input pipeline (the corrupt records it
    skipped, or None) counted during the run."""
    counters = built.manager.counters()
    values = counts.values(sess.run(counters)) if counters else {}
    counted = results.Counters(**dict(values, **counts.summary(values)))
    if counted.staleness_count is not None:
        log('gradient staleness: mean %.2f, max %d over %d updates; %d dropped' % (
            counted.staleness_mean, counted.staleness_max, counted.staleness_count,
            counted.stale_gradients_dropped))
    skipped = None
    if built.skipped_records is not None:
        skipped = int(sess.run(built.skipped_records))
        log('Skipped corrupt records: %d' % skipped)
    return counted, skipped


def _run_local(cfg, log, topology, target, container='', device_filters=()):
    built = build.build(cfg, topology, container=container)
    log('Model: %s  batch size per device: %d  devices: %d  data format: %s  compute dtype: '
        '%s  trainable parameters: %d' % (built.model_name, built.batch_size,
                                           built.topology.num_towers, cfg.model.data_format,
                                           cfg.precision.dtype, built.num_params))
    if cfg.profile.graph_file:
        log('Wrote the graph to %s' % graphs.write_graph(built.graph, cfg.profile.graph_file))
    evaluator = _evaluator(cfg, log)
    with contextlib.ExitStack() as stack:
        if evaluator:
            stack.enter_context(evaluator)
        config = tf.ConfigProto()
        config.CopyFrom(built.session_config)
        config.device_filters.extend(device_filters)
        sess = stack.enter_context(tf.Session(target, graph=built.graph, config=config))
        sess.run(built.init)
        restored = session_lib.restore_latest(sess, built.saver, cfg.run.train_dir)
        if restored:
            log('Restored %s' % restored)
        elif cfg.run.eval:
            raise config_lib.ConfigError('--eval: no checkpoint in --train_dir=%s'
                                         % cfg.run.train_dir)
        # After a restore too: it fills tower 0's copies only, and staged reads need priming.
        sess.run(built.post_init_ops)
        # This run's emulated compute only (the tally is the process's).
        timing.EMULATED_COMPUTE.reset()
        times, outcome = _run_mode(sess, built, cfg, log, evaluator)
        counters, skipped = _counters(sess, built, log)
    return _result(cfg, built, times,
                   results.Outcome(skipped_records=skipped, **outcome), counters, log)


def _result(cfg, built, times, outcome, counters, log):
    """Logs the figures and returns the result record's JSON form (appended to
    --result_file, if set)."""
    result = results.record(cfg, built, times, outcome=outcome, counters=counters)
    results.log_figures(result, log)
    return results.write(cfg, result)

"""The benchmark runner: a BenchmarkConfig in, a graph built, steps timed, a result dict out.

This is the library behind `python -m tfhp`; experiment scripts call `run(config)` directly.
It checks the configuration against the machine before building anything, builds the graph
(input -> towers -> variable manager), initialises or restores from `train_dir`, warms up, times
`num_batches` steps, checkpoints, and returns the figures (also appended to `result_file`).
"""
import collections
import contextlib
import dataclasses
import math
import os

import tensorflow.compat.v1 as tf

from tfhp import async_runner
from tfhp import config as config_lib
from tfhp import counts
from tfhp import devices
from tfhp import evaluation
from tfhp import loops
from tfhp import loss_scale as loss_scale_lib
from tfhp import optimizers
from tfhp import pipelines
from tfhp import replication
from tfhp import results
from tfhp import session as session_lib
from tfhp import step
from tfhp import timing
from tfhp import topology as topology_lib
from tfhp import tower
from tfhp.data import errors as data_errors
from tfhp.data import info as data_info
from tfhp.emulation import model as emulated_model
from tfhp.models import registry
from tfhp.ops import record_input
from tfhp.pipelines import input_only
from tfhp.pipelines import preprocessing
from tfhp.profiling import graphs
from tfhp.profiling import summaries


# Images of an emulated run: its model reads one element of them.
EMULATED_IMAGE_SIZE = 8


def _spec(cfg, data_name):
    """The registry's ModelSpec of cfg's model for data set `data_name`."""
    try:
        return registry.get(cfg.model.name, data_name)
    except ValueError as e:
        hint = ('' if cfg.data.data_dir or data_name == registry.CIFAR10 else
                ' (--data_name=cifar10 selects the CIFAR-10 models)')
        raise config_lib.ConfigError('--model: %s%s' % (e, hint)) from None


def model_spec(cfg):
    """The registry's ModelSpec of cfg's model, for cfg's data set."""
    return _spec(cfg, data_set(cfg).name)


def _resolve(cfg, data_name):
    """Checks cfg against the registry (the variant for data set `data_name`) and the
    machine; returns (spec, batch, image, lr)."""
    spec = _spec(cfg, data_name)
    devices.check(cfg.device, cfg.model, cfg.xla)
    profile = cfg.model.compute_profile
    batch_size = cfg.model.batch_size or (profile.batch_size if profile else spec.batch_size)
    rate = cfg.optimizer.learning_rate or spec.learning_rate
    if cfg.optimizer.resnet_base_lr:
        if not registry.has_resnet_rate(spec):
            raise config_lib.ConfigError(
                '--resnet_base_lr scales the default rate of ImageNet ResNets; --model=%s is '
                'not one' % spec.name)
        rate = registry.resnet_learning_rate(batch_size, cfg.optimizer.resnet_base_lr)
    if cfg.run.eval:
        batch_size = cfg.evaluation.eval_batch_size or batch_size
    # An emulated model reads one element of its images: the smallest synthetic ones do.
    image_size = EMULATED_IMAGE_SIZE if profile else cfg.model.image_size or spec.image_size
    return spec, batch_size, image_size, rate


def global_batch_size(cfg, data_name):
    """Images one step of cfg takes from the training set, over every tower and worker."""
    batch_size = cfg.model.batch_size or _spec(cfg, data_name).batch_size
    return batch_size * cfg.device.num_devices * max(1, cfg.cluster.num_workers)


def steps_for_epochs(cfg, epochs):
    """The number of training steps (at least 1) of cfg that read `epochs` epochs."""
    info = data_set(cfg)
    return max(1, int(math.ceil(epochs * info.num_examples['train'] /
                                global_batch_size(cfg, info.name))))


def resolve_epochs(cfg):
    """cfg with --num_epochs turned into --num_batches (cfg itself without --num_epochs).

    The epochs count every training step, the warm-up's too (they train and advance the
    learning-rate schedule): ceil(epochs * training examples / global batch) steps in all
    (tf_cnn_benchmarks' count, the global batch counting every tower of every worker), of
    which --num_warmup_batches are the warm-up and the rest (at least 1) timed. Call before
    anything reads cfg.run.num_batches (the `tfhp` command does, for cluster tasks too).
    """
    if cfg.run.num_epochs is None:
        return cfg
    steps = steps_for_epochs(cfg, cfg.run.num_epochs)
    timed = max(1, steps - cfg.run.num_warmup_batches)
    return dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, num_batches=timed))


def resolve_classes(cfg):
    """cfg with --num_classes set to its data set's number of classes (a data directory's, or
    the one synthetic data stands in for), so that the result's configuration records what
    the model was built with."""
    return dataclasses.replace(cfg, model=dataclasses.replace(
        cfg.model, num_classes=data_set(cfg).num_classes))


def data_set(cfg):
    """The DataSetInfo of cfg's data: its directory's, or the one synthetic data stands in for.

    Synthetic data keeps the size of the data set it stands in for, so that epochs in
    learning-rate schedules mean the same as on the real data. Standing in for ImageNet it has
    --num_classes classes; for CIFAR-10, CIFAR-10's 10.
    """
    if not cfg.data.data_dir:
        info = data_info.STAND_INS[cfg.data.data_name or data_info.IMAGENET.name]
        if info is data_info.IMAGENET:
            info = dataclasses.replace(info, num_classes=cfg.model.num_classes)
        return info
    try:
        return data_info.load(cfg.data.data_dir, cfg.data.data_name)
    except data_info.DataSetError as e:
        raise config_lib.ConfigError('--data_dir: %s' % e) from None


def _make_pipeline(cfg, batch_size, image_size, topology, num_classes, data_name):
    """The configured pipeline; it checks its files when made, before building any op."""
    # A between-graph worker's towers continue the numbering of the workers before it, so no
    # two towers of a cluster see the same data; its RecordInput readers start further on.
    between_graph = topology.mode.graph_per_worker
    first_tower = topology.task_index * topology.num_towers if between_graph else 0
    shift_ratio = cfg.data.record_input_shift_ratio or (
        topology.task_index / topology.num_workers if between_graph else 0.0)
    try:
        return pipelines.make_pipeline(
            cfg.data, batch_size, image_size, num_classes, cfg.model.data_format,
            train=not (cfg.run.eval or cfg.run.forward_only),
            seed=cfg.run.tf_random_seed + first_tower,
            shift_ratio=shift_ratio, data_name=data_name, deterministic=cfg.run.deterministic)
    except record_input.InputFilesError as e:
        raise config_lib.ConfigError('--data_dir: %s' % e) from None


ValidationInput = collections.namedtuple('ValidationInput', [
    'spec', 'batch_size', 'image_size', 'data_set', 'pipeline'])


def validation_input(cfg, topology):
    """What an --eval run of cfg reads, for evaluation graphs the runner does not build
    (`tfhp.ensemble`): cfg checked against the registry and the machine as `build` checks it,
    its ModelSpec, batch size per tower (--eval_batch_size first), image size, DataSetInfo,
    and its validation pipeline for `topology`.

    Raises:
      tfhp.config.ConfigError: the configuration cannot work on this machine.
    """
    cfg = dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, eval=True))
    info = data_set(cfg)
    spec, batch_size, image_size, _ = _resolve(cfg, info.name)
    return ValidationInput(spec, batch_size, image_size, info, _make_pipeline(
        cfg, batch_size, image_size, topology, info.num_classes, info.name))


Built = collections.namedtuple('Built', [
    'graph', 'ops', 'saver', 'init', 'topology', 'session_config', 'model_name',
    'batch_size', 'image_size', 'images_per_step', 'num_params',
    'post_init_ops',      # run once after initialisation or restore
    'replica_train_ops',  # in-graph async: one train op per replica thread; else None
    'summary_op',  # merged TensorBoard summaries, or None when none are written
    'skipped_records',  # corrupt records skipped so far, or None when none are skipped
    'manager',     # the VariableManager (tfhp.distributed reads its counters)
    'learning_rate'])  # the training step's rate tensor, or None when not training


def build(cfg, topology=None, finalize=True, container=''):
    """Checks `cfg` and builds its graph (finalized) without running anything.

    Experiment scripts use this to time their own loops on exactly the runner's graph.

    Args:
      cfg: a `tfhp.config.BenchmarkConfig`.
      topology: where to build; default: `topology.for_config(cfg)` (this process's devices,
        or its part of the cluster).
      finalize: finalize the graph; False lets the caller add ops (and finalize) first.
      container: build every stateful op in this resource container ('': the default one):
        a client of shared servers keeps its variables apart from other clients' there.

    Returns:
      A `Built`; `ops` is a `step.StepOps` (training), `step.EvalOps` (cfg.run.eval and
      cfg.run.forward_only) or `input_only.InputStep` (cfg.data.input_only).
    Raises:
      tfhp.config.ConfigError: the configuration cannot work on this machine.
    """
    info = data_set(cfg)
    spec, batch_size, image_size, base_rate = _resolve(cfg, info.name)
    topology = topology or topology_lib.for_config(cfg)
    graph = tf.Graph()
    with graph.as_default(), tf.container(container):
        tf.set_random_seed(cfg.run.tf_random_seed)
        pipeline = _make_pipeline(cfg, batch_size, image_size, topology, info.num_classes,
                                  info.name)
        manager = replication.make_variable_manager(config_lib.all_reduce_replication(cfg),
                                                    topology, cfg.cluster, cfg.staleness,
                                                    trains=cfg.trains)
        model_fn = _model_fn(cfg, spec, topology, info.num_classes)
        ops, replica_train_ops, post_init_ops, summary_op, rate = _step_ops(
            cfg, pipeline, model_fn, manager, topology, base_rate, batch_size,
            info.num_examples['train'])
        # In the graph: a manager may read its variables from the graph's collections
        # (per_tower_copies: tf.trainable_variables(scope=...)).
        num_params = tower.count_params(manager.trainable_variables(0))
        saver = (None if cfg.data.input_only else
                 tf.train.Saver(manager.savable_variables(),
                                max_to_keep=cfg.run.max_ckpts_to_keep))
        init = tf.group(tf.global_variables_initializer(), tf.local_variables_initializer())
        skipped_records = preprocessing.skipped_records()
    if finalize:
        graph.finalize()
    return Built(graph=graph, ops=ops, saver=saver, init=init, topology=topology,
                 session_config=_session_config(cfg, topology), model_name=spec.name,
                 batch_size=batch_size, image_size=image_size,
                 images_per_step=batch_size * topology.num_towers,
                 num_params=num_params, summary_op=summary_op, post_init_ops=post_init_ops,
                 replica_train_ops=replica_train_ops, manager=manager,
                 skipped_records=skipped_records, learning_rate=rate)


def _model_fn(cfg, spec, topology, num_classes):
    """model_fn(images, labels) -> (loss, logits) of one tower of cfg's model (`spec`, or
    its emulated compute profile), slowed by this worker's --straggler_mode=compute delay."""
    delay_s = (cfg.cluster.straggler_delay_s(topology.task_index, 'compute')
               if topology.mode.graph_per_worker else 0.0)
    if cfg.model.emulated_compute:
        return emulated_model.make_model_fn(cfg.model.compute_profile, num_classes,
                                            delay_s=delay_s)
    return tower.make_model_fn(spec, num_classes, cfg.model.data_format,
                               cfg.model.fuse_batchnorm, is_training=cfg.trains,
                               dtype=cfg.precision.dtype,
                               variable_dtype=cfg.precision.variable_dtype,
                               delay_s=delay_s, delay_device=topology.input_device,
                               slice_bytes=cfg.model.layer_slice_bytes)


def _step_ops(cfg, pipeline, model_fn, manager, topology, base_rate, batch_size,
              examples_per_epoch):
    """The step of cfg's mode: (ops, replica_train_ops, post_init_ops, summary_op,
    learning_rate).

    `ops` is an `input_only.InputStep` (cfg.data.input_only), a `step.EvalOps` (not training)
    or the training step's (`_train_ops`); the others are `Built`'s fields of the same names.
    """
    if cfg.data.input_only:
        return input_only.build_step(pipeline, topology), None, [], None, None
    if not cfg.trains:
        # In a cluster the global step (the weights' step) is the ps tasks' one.
        with tf.device(topology.variable_devices[0] if topology.mode.cluster else None):
            tf.train.get_or_create_global_step()
        ops = step.build_eval_step(pipeline, model_fn, manager, topology,
                                   compile_towers=cfg.xla.xla_compile)
        return ops, None, manager.post_init_ops(), None, None
    return _train_ops(cfg, pipeline, model_fn, manager, topology, base_rate, batch_size,
                      examples_per_epoch)


def _train_ops(cfg, pipeline, model_fn, manager, topology, base_rate, batch_size,
               examples_per_epoch):
    """The training step (`step.StepOps`; in-graph async, `async_runner`'s with one train op
    per replica): (ops, replica_train_ops or None, post_init_ops, summary_op or None, the
    learning-rate tensor)."""
    in_graph_async = topology.in_graph_async
    # In a cluster the global step is shared: on the first parameter device; the loss
    # scale beside it.
    with tf.device(None if not topology.mode.cluster else topology.variable_devices[0]):
        global_step = tf.train.get_or_create_global_step()
        scale = _loss_scale(cfg.precision)
    # In-graph async: global_step counts replica updates of batch_size images each.
    rate = optimizers.learning_rate(
        cfg.optimizer, base_rate, global_step,
        batch_size if in_graph_async else batch_size * topology.num_towers, examples_per_epoch)
    verbosity = cfg.profile.summary_verbosity if cfg.profile.save_summaries_steps else 0
    decay_in_update = optimizers.decays_in_update(
        cfg.optimizer, scale, topology.synchronous, cfg.replication.staged_reads,
        momentum_on_senders=bool(cfg.replication.momentum_correction))
    optimizer_fn = _optimizer_fn(cfg.optimizer, rate, scale, decay_in_update, verbosity)
    step_kwargs = dict(weight_decay=cfg.optimizer.weight_decay,
                       gradient_clip=cfg.optimizer.gradient_clip, loss_scale=scale,
                       compile_towers=cfg.xla.xla_compile, decay_in_update=decay_in_update)
    replica_train_ops = None
    if in_graph_async:
        ops, replica_train_ops = async_runner.build_replica_steps(
            pipeline, model_fn, manager, optimizer_fn, topology, **step_kwargs)
    else:
        ops = step.build_train_step(pipeline, model_fn, manager, optimizer_fn, topology,
                                    **step_kwargs)
    summary_op = summaries.merged_summary(verbosity, {'loss': ops.loss, 'learning_rate': rate})
    return ops, replica_train_ops, ops.post_init_ops, summary_op, rate


def _optimizer_fn(optimizer_cfg, rate, scale, decay_in_update, verbosity):
    """optimizer_fn() -> a new optimizer of `optimizer_cfg` at `rate`, its loss scaled by
    `scale` (a LossScale, or None), its gradients summarised at `verbosity`."""
    optimizer_fn = lambda: optimizers.make_optimizer(optimizer_cfg, rate, decay_in_update)
    if scale:
        optimizer_fn = scale.optimizer_fn(optimizer_fn)
    # Outermost, so the summaries see every gradient, skipped update or not.
    return summaries.summarizing_optimizer_fn(optimizer_fn, verbosity)


def _session_config(cfg, topology):
    """The ConfigProto of a session running cfg's graph on `topology`.

    --deterministic in one process runs one op at a time on one thread (both pools of one
    thread): ops side by side let a step's updates race with reads of the same variables
    (lenet's loss differed in the third digit at the second step), and two virtual devices'
    ops sharing the intra-op pool rounded differently (in the fourth; 2-core CPU, TF 2.21).
    TensorFlow keeps the process's first pools, so such a run needs a process of its own: the
    `tfhp` command sets them before TensorFlow starts (`tfhp.cli.runtime_environment`). A
    cluster task keeps its pools: its blocking queues and barriers need more than one thread.
    """
    single = cfg.run.deterministic and not cfg.cluster.enabled
    proto = session_lib.config_proto(
        num_cpu_devices=topology.num_towers if cfg.device.device == 'cpu' else 1,
        num_intra_threads=1 if single else cfg.device.num_intra_threads,
        num_inter_threads=1 if single else session_lib.inter_op_threads(
            cfg.device.num_inter_threads, pipelines.preprocesses_in_graph(cfg.data)),
        thread_spinning=cfg.device.thread_spinning)
    if cfg.xla.xla:
        proto.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.ON_1
    return proto


def _loss_scale(precision):
    """The training graph's LossScale, or None when the loss is not scaled."""
    if precision.loss_scale is None:
        return None
    return loss_scale_lib.LossScale(precision.loss_scale,
                                    auto=precision.fp16_enable_auto_loss_scale,
                                    inc_every_n=precision.fp16_inc_loss_scale_every_n)


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
    every = evaluation_cfg.eval_during_training_every_n_steps or steps_for_epochs(
        cfg, evaluation_cfg.eval_during_training_every_n_epochs)
    return evaluation.DuringTraining(
        build(_eval_config(cfg)), every, evaluation_cfg.num_eval_batches or cfg.run.num_batches,
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
    cfg = resolve_classes(resolve_epochs(cfg))
    try:
        return _run_local(cfg, log, topology, target, container, device_filters)
    except tf.errors.OpError as e:
        corrupt = data_errors.describe_corrupt_input(
            cfg.data, e, 'train' if cfg.trains else 'validation', data_set(cfg))
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
    built = build(cfg, topology, container=container)
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

"""The graph of a BenchmarkConfig, built and not run: input -> towers -> variable manager, in the
mode the configuration asks for (training, evaluation, inference, the input alone), and the
session configuration to run it with (`build`, `Built`)."""
import collections
import dataclasses

import tensorflow.compat.v1 as tf

from tfhp import config as config_lib
from tfhp import pipelines
from tfhp import replication
from tfhp import session as session_lib
from tfhp import topology as topology_lib
from tfhp.emulation import model as emulated_model
from tfhp.ops import record_input
from tfhp.pipelines import input_only
from tfhp.pipelines import preprocessing
from tfhp.profiling import summaries
from tfhp.runner import async_runner
from tfhp.runner import loss_scale as loss_scale_lib
from tfhp.runner import optimizers
from tfhp.runner import resolve as resolve_lib
from tfhp.runner import step
from tfhp.runner import tower


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
    info = resolve_lib.data_set(cfg)
    spec, batch_size, image_size, _ = resolve_lib.resolve(cfg, info.name)
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
    info = resolve_lib.data_set(cfg)
    spec, batch_size, image_size, base_rate = resolve_lib.resolve(cfg, info.name)
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
            cfg.device.num_inter_threads, pipelines.preprocesses_in_graph(cfg.data)))
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

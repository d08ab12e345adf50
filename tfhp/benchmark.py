"""The benchmark runner: a BenchmarkConfig in, a graph built, steps timed, a result dict out.

This is the library behind `python -m tfhp`; experiment scripts call `run(config)` directly.
It checks the configuration against the machine before building anything, builds the graph
(input -> towers -> variable manager), initialises or restores from `train_dir`, warms up, times
`num_batches` steps, checkpoints, and returns the figures (also appended to `result_file`).
"""
import collections
import dataclasses
import platform
import time

import tensorflow.compat.v1 as tf

import tfhp
from tfhp import async_runner
from tfhp import config as config_lib
from tfhp import counts
from tfhp import devices
from tfhp import optimizers
from tfhp import pipelines
from tfhp import replication
from tfhp import session as session_lib
from tfhp import step
from tfhp import timing
from tfhp import topology as topology_lib
from tfhp import tower
from tfhp.data import errors as data_errors
from tfhp.data import info as data_info
from tfhp.models import registry
from tfhp.ops import record_input
from tfhp.pipelines import input_only
from tfhp.pipelines import preprocessing
from tfhp.profiling import capture
from tfhp.profiling import summaries


def _resolve(cfg, data_name):
    """Checks cfg against the registry (the variant for data set `data_name`) and the
    machine; returns (spec, batch, image, lr)."""
    try:
        spec = registry.get(cfg.model.name, data_name)
    except ValueError as e:
        hint = ('' if cfg.data.data_dir or data_name == registry.CIFAR10 else
                ' (--data_name=cifar10 selects the CIFAR-10 models)')
        raise config_lib.ConfigError('--model: %s%s' % (e, hint)) from None
    devices.check(cfg.device, cfg.model)
    return (spec, cfg.model.batch_size or spec.batch_size,
            cfg.model.image_size or spec.image_size,
            cfg.optimizer.learning_rate or spec.learning_rate)


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
    between_graph = topology.graph_mode == 'between_graph'
    first_tower = topology.task_index * topology.num_towers if between_graph else 0
    shift_ratio = cfg.data.record_input_shift_ratio or (
        topology.task_index / topology.num_workers if between_graph else 0.0)
    try:
        return pipelines.make_pipeline(
            cfg.data, batch_size, image_size, num_classes, cfg.model.data_format,
            train=not cfg.run.eval, seed=cfg.run.tf_random_seed + first_tower,
            shift_ratio=shift_ratio, data_name=data_name)
    except record_input.InputFilesError as e:
        raise config_lib.ConfigError('--data_dir: %s' % e) from None


def _format_interval(step_index, durations, values, images_per_step, interval):
    recent = durations[-interval:]
    line = 'step %d\timages/sec: %.1f\tstep_time_ms: %.2f' % (
        step_index, images_per_step * len(recent) / sum(recent),
        1000.0 * sum(recent) / len(recent))
    if values is not None:
        line += '\tloss: %.4f' % values['loss']
        if 'top1' in values:
            line += '\ttop_1: %.4f\ttop_5: %.4f' % (values['top1'], values['top5'])
    return line


Built = collections.namedtuple('Built', [
    'graph', 'ops', 'saver', 'init', 'topology', 'session_config', 'model_name',
    'batch_size', 'image_size', 'images_per_step', 'num_params',
    'post_init_ops',      # run once after initialisation or restore
    'replica_train_ops',  # in-graph async: one train op per replica thread; else None
    'summary_op',  # merged TensorBoard summaries, or None when none are written
    'skipped_records',  # corrupt records skipped so far, or None when none are skipped
    'manager'])    # the VariableManager (tfhp.distributed reads its counters)


def build(cfg, topology=None, finalize=True):
    """Checks `cfg` and builds its graph (finalized) without running anything.

    Experiment scripts use this to time their own loops on exactly the runner's graph.

    Args:
      cfg: a `tfhp.config.BenchmarkConfig`.
      topology: where to build; default: this process's devices (`tfhp.cluster` passes a
        cluster topology).
      finalize: finalize the graph; False lets the caller add ops (and finalize) first.

    Returns:
      A `Built`; `ops` is a `step.StepOps` (training), `step.EvalOps` (cfg.run.eval) or
      `input_only.InputStep` (cfg.data.input_only).
    Raises:
      tfhp.config.ConfigError: the configuration cannot work on this machine.
    """
    info = data_set(cfg)
    num_classes, examples_per_epoch = info.num_classes, info.num_examples['train']
    spec, batch_size, image_size, base_rate = _resolve(cfg, info.name)
    topology = topology or topology_lib.Topology.local(cfg.device.device,
                                                       cfg.device.num_devices,
                                                       cfg.device.local_parameter_device)
    images_per_step = batch_size * topology.num_towers
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(cfg.run.tf_random_seed)
        pipeline = _make_pipeline(cfg, batch_size, image_size, topology, num_classes,
                                  info.name)
        manager = replication.make_variable_manager(cfg.replication, topology, cfg.cluster,
                                                    cfg.staleness)
        delay_s = (cfg.cluster.straggler_delay_s(topology.task_index, 'compute')
                   if topology.graph_mode == 'between_graph' else 0.0)
        model_fn = tower.make_model_fn(spec, num_classes, cfg.model.data_format,
                                       cfg.model.fuse_batchnorm, is_training=not cfg.run.eval,
                                       delay_s=delay_s, delay_device=topology.input_device)
        summary_op = replica_train_ops = None
        in_graph_async = topology.graph_mode != 'between_graph' and (
            not cfg.cluster.cross_replica_sync)
        if cfg.data.input_only:
            ops = input_only.build_step(pipeline, topology)
            post_init_ops = []
        elif cfg.run.eval:
            ops = step.build_eval_step(pipeline, model_fn, manager, topology)
            post_init_ops = manager.post_init_ops()
        else:
            # In a cluster the global step is shared: on the first parameter device.
            with tf.device(None if topology.graph_mode == 'local' else
                           topology.variable_devices[0]):
                global_step = tf.train.get_or_create_global_step()
            # In-graph async: global_step counts replica updates of batch_size images each.
            rate = optimizers.learning_rate(
                cfg.optimizer, base_rate, global_step,
                batch_size if in_graph_async else images_per_step, examples_per_epoch)
            verbosity = cfg.profile.summary_verbosity if cfg.profile.save_summaries_steps else 0
            optimizer_fn = summaries.summarizing_optimizer_fn(
                lambda: optimizers.make_optimizer(cfg.optimizer, rate), verbosity)
            step_kwargs = dict(weight_decay=cfg.optimizer.weight_decay,
                               gradient_clip=cfg.optimizer.gradient_clip)
            if in_graph_async:
                ops, replica_train_ops = async_runner.build_replica_steps(
                    pipeline, model_fn, manager, optimizer_fn, topology, **step_kwargs)
            else:
                ops = step.build_train_step(pipeline, model_fn, manager, optimizer_fn,
                                            topology, **step_kwargs)
            post_init_ops = ops.post_init_ops
            summary_op = summaries.merged_summary(verbosity, {'loss': ops.loss,
                                                              'learning_rate': rate})
        num_params = tower.count_params(manager.trainable_variables(0))
        saver = (None if cfg.data.input_only else
                 tf.train.Saver(manager.savable_variables(),
                                max_to_keep=cfg.run.max_ckpts_to_keep))
        init = tf.group(tf.global_variables_initializer(), tf.local_variables_initializer())
        skipped_records = preprocessing.skipped_records()
    if finalize:
        graph.finalize()
    proto = session_lib.config_proto(
        num_cpu_devices=topology.num_towers if cfg.device.device == 'cpu' else 1,
        num_intra_threads=cfg.device.num_intra_threads,
        num_inter_threads=cfg.device.num_inter_threads)
    return Built(graph=graph, ops=ops, saver=saver, init=init, topology=topology,
                 session_config=proto, model_name=spec.name, batch_size=batch_size,
                 image_size=image_size, images_per_step=images_per_step,
                 num_params=num_params, summary_op=summary_op, post_init_ops=post_init_ops,
                 replica_train_ops=replica_train_ops, manager=manager,
                 skipped_records=skipped_records)


def run(cfg, log=print, topology=None, target=''):
    """Runs one benchmark.

    Args:
      cfg: a `tfhp.config.BenchmarkConfig` (a cluster task runs through `tfhp.cluster.roles`,
        which calls this for the in-graph client).
      log: called with each line to print.
      topology, target: the in-graph client of a cluster (`tfhp.cluster.client`) passes its
        cluster-wide topology and its server's session target.
    Returns:
      The result dict (the JSON line appended to cfg.run.result_file, if set).
    Raises:
      tfhp.config.ConfigError: the configuration cannot work on this machine, an output path
        cannot be written, or a record of --data_dir is corrupt (the message names its file
        and index).
    """
    # Before any work: an unwritable --train_dir would otherwise fail at the final save.
    config_lib.check_output_paths(cfg, config_lib.writes_train_dir(cfg.cluster))
    try:
        return _run_local(cfg, log, topology, target)
    except tf.errors.OpError as e:
        corrupt = data_errors.describe_corrupt_input(
            cfg.data, e, 'validation' if cfg.run.eval else 'train', data_set(cfg))
        if corrupt:
            raise config_lib.ConfigError(corrupt) from e
        raise


def _run_local(cfg, log, topology, target):
    built = build(cfg, topology)
    ops, saver = built.ops, built.saver
    batch_size, image_size, topology = built.batch_size, built.image_size, built.topology
    images_per_step, num_params = built.images_per_step, built.num_params
    log('Model: %s  batch size per device: %d  devices: %d  data format: %s  '
        'trainable parameters: %d' % (built.model_name, batch_size, topology.num_towers,
                                       cfg.model.data_format, num_params))
    with tf.Session(target, graph=built.graph, config=built.session_config) as sess:
        sess.run(built.init)
        restored = session_lib.restore_latest(sess, saver, cfg.run.train_dir)
        if restored:
            log('Restored %s' % restored)
        elif cfg.run.eval:
            raise config_lib.ConfigError('--eval: no checkpoint in --train_dir=%s'
                                         % cfg.run.train_dir)
        # After a restore too: it fills tower 0's copies only, and staged reads need priming.
        sess.run(built.post_init_ops)
        if cfg.data.input_only:
            times, extra = _run_input_only(sess, ops, cfg.run)
        elif cfg.run.eval:
            times, extra = _run_eval(sess, ops, cfg.run, log)
        elif built.replica_train_ops:
            times, extra = _run_async(sess, built, cfg.run, saver, log,
                                      cfg.staleness.async_warmup_steps)
        else:
            times, extra = _run_train(sess, ops, cfg, images_per_step, saver, log,
                                      built.summary_op)
        # Counts the manager keeps (gradient staleness); its tensors exist already.
        counters = built.manager.counters()
        if counters:
            extra.update(counts.values(sess.run(counters)))
        if counts.COUNT in extra:
            extra.update(counts.summary(extra))
            log('gradient staleness: mean %.2f, max %d over %d updates; %d dropped' % tuple(
                extra[k] for k in ('staleness_mean', 'staleness_max', 'staleness_count',
                                   'stale_gradients_dropped')))
        if built.skipped_records is not None:
            extra['skipped_records'] = int(sess.run(built.skipped_records))
            log('Skipped corrupt records: %d' % extra['skipped_records'])

    summary = times.summary()
    spread = summary['images_per_sec_spread']
    step_ms = summary['step_time_ms']
    log('-' * 64)
    log('total images/sec: %.2f (per step: mean %.2f std %.2f p50 %.2f p90 %.2f)' % (
        summary['images_per_sec'], spread['mean'], spread['std'], spread['p50'], spread['p90']))
    log('step_time_ms: mean %.2f p50 %.2f p90 %.2f' % (step_ms['mean'], step_ms['p50'],
                                                       step_ms['p90']))
    log('-' * 64)
    result = dict(summary, **extra)
    result.update({
        'mode': ('input_only' if cfg.data.input_only else 'eval' if cfg.run.eval else
                 'train'),
        'model': built.model_name,
        'batch_size': batch_size,
        'global_batch_size': images_per_step,
        'image_size': image_size,
        'num_devices': topology.num_towers,
        'num_params': num_params,
        'config': cfg.to_dict(),
        'tfhp_version': tfhp.__version__,
        'tf_version': tf.__version__,
        'host': platform.node(),
        'time': time.strftime('%Y-%m-%dT%H:%M:%S'),
    })
    if cfg.run.result_file:
        timing.append_json(cfg.run.result_file, result)
    return result


def _run_train(sess, ops, cfg, images_per_step, saver, log, summary_op):
    run_cfg, profile = cfg.run, cfg.profile
    session_lib.warm_up(sess, ops.warmup_ops)
    fetches = {'loss': ops.loss}
    if run_cfg.print_training_accuracy:
        fetches.update(top1=ops.top1, top5=ops.top5)

    def on_interval(index, durations, values):
        log(_format_interval(index, durations, values, images_per_step, run_cfg.display_every))

    observers = [session_lib.Observer(run_cfg.display_every, fetches, on_interval)]
    writer = None
    if summary_op is not None:
        writer = tf.summary.FileWriter(run_cfg.train_dir, sess.graph)
        observers.append(summaries.observer(summary_op, ops.global_step, writer,
                                            profile.save_summaries_steps, images_per_step))
    on_trace = (capture.trace_writer(profile.trace_file, profile.trace_memory, log)
                if profile.trace_file else None)
    # Every fetch signature of the timed loop is run once here: the first run of a new
    # signature builds its executor, which must not be charged to a timed step.
    signatures = session_lib.step_fetches(ops.train_op, observers)
    for i in range(run_cfg.num_warmup_batches):
        sess.run(signatures[i + 1] if i + 1 < len(signatures) else ops.train_op)

    # Checkpoints between chunks of steps, so their writing is not charged to any step.
    chunk = run_cfg.save_model_steps or run_cfg.num_batches
    parts, done, saved = [], 0, []
    while done < run_cfg.num_batches:
        count = min(chunk, run_cfg.num_batches - done)
        parts.append(session_lib.run_steps(
            sess, ops.train_op, count, images_per_step, observers, first_step=done + 1,
            trace_step=profile.trace_step if on_trace else None, on_trace=on_trace))
        done += count
        if run_cfg.train_dir:
            saved.append(_save(sess, saver, run_cfg.train_dir, ops.global_step, parts, log))
    if writer is not None:
        writer.close()
    final = sess.run(fetches)
    extra = {'final_loss': float(final['loss']), 'global_step': int(sess.run(ops.global_step)),
             'checkpoints': saved}
    if run_cfg.print_training_accuracy:
        extra.update(train_top1=float(final['top1']), train_top5=float(final['top5']))
    return timing.StepTimes.concat(parts), extra


def _run_input_only(sess, ops, run_cfg):
    """Times the input pipeline alone: batches delivered to every tower, no model."""
    session_lib.warm_up(sess, ops.warmup_ops)
    for _ in range(run_cfg.num_warmup_batches):
        sess.run(ops.train_op)
    return session_lib.run_steps(sess, ops.train_op, run_cfg.num_batches,
                                 ops.images_per_step), {}


def _save(sess, saver, train_dir, global_step, parts, log):
    """Writes a checkpoint; returns [its global step, timed seconds of the `parts` so far]."""
    log('Saved %s' % session_lib.save(sess, saver, train_dir, global_step))
    return [int(sess.run(global_step)), sum(p.wall_time for p in parts)]


def _run_async(sess, built, run_cfg, saver, log, solo_steps):
    """In-graph asynchronous training: every replica steps in its own thread, after replica 0
    trained alone for `solo_steps` timed steps (--async_warmup_steps). Checkpoints are
    written between chunks of --save_model_steps steps per replica."""
    ops = built.ops
    session_lib.warm_up(sess, ops.warmup_ops)
    parts = [async_runner.run_replicas(sess, built.replica_train_ops[:1], solo_steps,
                                       built.batch_size)[0]] if solo_steps else []
    chunk = run_cfg.save_model_steps or run_cfg.num_batches
    chunks, saved, done = [], [], 0
    while done < run_cfg.num_batches:
        count = min(chunk, run_cfg.num_batches - done)
        chunks.append(async_runner.run_replicas(
            sess, built.replica_train_ops, count, built.batch_size,
            num_warmup=0 if done else run_cfg.num_warmup_batches))
        parts.append(chunks[-1][0])
        done += count
        if run_cfg.train_dir:
            saved.append(_save(sess, saver, run_cfg.train_dir, ops.global_step, parts, log))
    per_replica = [timing.StepTimes.concat(r) for r in zip(*[c[1] for c in chunks])]
    for t, replica in enumerate(per_replica):
        log('replica %d: %d steps  images/sec: %.1f' % (t, replica.num_steps,
                                                        replica.images_per_sec))
    extra = {'final_loss': float(sess.run(ops.loss)),
             'global_step': int(sess.run(ops.global_step)), 'checkpoints': saved,
             'replica_steps': [r.num_steps for r in per_replica],
             'replica_images_per_sec': [r.images_per_sec for r in per_replica]}
    return timing.StepTimes.concat(parts), extra


def _run_eval(sess, ops, run_cfg, log):
    session_lib.warm_up(sess, ops.warmup_ops)
    counts = {'top1': 0.0, 'top5': 0.0}
    fetches = [ops.top1_correct, ops.top5_correct, ops.put_ops]
    durations = []
    start = time.perf_counter()
    for _ in range(run_cfg.num_batches):
        begin = time.perf_counter()
        top1, top5, _ = sess.run(fetches)
        durations.append(time.perf_counter() - begin)
        counts['top1'] += top1
        counts['top5'] += top5
    times = timing.StepTimes(durations, time.perf_counter() - start, ops.num_images)
    total = ops.num_images * run_cfg.num_batches
    extra = {'top_1_accuracy': counts['top1'] / total, 'top_5_accuracy': counts['top5'] / total,
             'global_step': int(sess.run(tf.train.get_global_step(sess.graph)))}
    log('Accuracy @ 1 = %.4f Accuracy @ 5 = %.4f [%d examples]'
        % (extra['top_1_accuracy'], extra['top_5_accuracy'], total))
    return times, extra

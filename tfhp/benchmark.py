"""The benchmark runner: a BenchmarkConfig in, a graph built, steps timed, a result dict out.

This is the library behind `python -m tfhp`; experiment scripts call `run(config)` directly.
It checks the configuration against the machine before building anything, builds the graph
(input -> towers -> variable manager), initialises or restores from `train_dir`, warms up, times
`num_batches` steps, checkpoints, and returns the figures (also appended to `result_file`).
"""
import collections
import platform
import time

import tensorflow.compat.v1 as tf

import tfhp
from tfhp import config as config_lib
from tfhp import devices
from tfhp import optimizers
from tfhp import replication
from tfhp import session as session_lib
from tfhp import step
from tfhp import timing
from tfhp import topology as topology_lib
from tfhp import tower
from tfhp.models import registry
from tfhp.pipelines import synthetic

# ImageNet's training-set size: synthetic data stands in for it, so epochs in learning-rate
# schedules mean the same as on real ImageNet.
IMAGENET_TRAIN_EXAMPLES = 1281167


def _resolve(cfg):
    """Checks cfg against the registry and the machine; returns (spec, batch, image, lr)."""
    try:
        spec = registry.get(cfg.model.name)
    except ValueError as e:
        raise config_lib.ConfigError('--model: %s' % e) from None
    devices.check(cfg.device, cfg.model)
    return (spec, cfg.model.batch_size or spec.batch_size,
            cfg.model.image_size or spec.image_size,
            cfg.optimizer.learning_rate or spec.learning_rate)


def _make_pipeline(cfg, batch_size, image_size):
    return synthetic.SyntheticPipeline(batch_size, image_size, cfg.model.num_classes,
                                       data_format=cfg.model.data_format,
                                       seed=cfg.run.tf_random_seed)


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
    'batch_size', 'image_size', 'images_per_step', 'num_params'])


def build(cfg):
    """Checks `cfg` and builds its graph (finalized) without running anything.

    Experiment scripts use this to time their own loops on exactly the runner's graph.

    Returns:
      A `Built`; `ops` is a `step.StepOps` (training) or `step.EvalOps` (cfg.run.eval).
    Raises:
      tfhp.config.ConfigError: the configuration cannot work on this machine.
    """
    spec, batch_size, image_size, base_rate = _resolve(cfg)
    topology = topology_lib.Topology.local(cfg.device.device, cfg.device.num_devices,
                                           cfg.device.local_parameter_device)
    images_per_step = batch_size * topology.num_towers
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(cfg.run.tf_random_seed)
        pipeline = _make_pipeline(cfg, batch_size, image_size)
        manager = replication.make_variable_manager(cfg.replication, topology)
        model_fn = tower.make_model_fn(spec, cfg.model.num_classes, cfg.model.data_format,
                                       cfg.model.fuse_batchnorm, is_training=not cfg.run.eval)
        if cfg.run.eval:
            ops = step.build_eval_step(pipeline, model_fn, manager, topology)
        else:
            global_step = tf.train.get_or_create_global_step()
            rate = optimizers.learning_rate(cfg.optimizer, base_rate, global_step,
                                            images_per_step, IMAGENET_TRAIN_EXAMPLES)
            ops = step.build_train_step(
                pipeline, model_fn, manager, lambda: optimizers.make_optimizer(cfg.optimizer,
                                                                               rate),
                topology, weight_decay=cfg.optimizer.weight_decay,
                gradient_clip=cfg.optimizer.gradient_clip)
        num_params = tower.count_params(manager.trainable_variables(0))
        saver = tf.train.Saver(manager.savable_variables(), max_to_keep=3)
        init = tf.group(tf.global_variables_initializer(), tf.local_variables_initializer())
    graph.finalize()
    proto = session_lib.config_proto(
        num_cpu_devices=topology.num_towers if cfg.device.device == 'cpu' else 1,
        num_intra_threads=cfg.device.num_intra_threads,
        num_inter_threads=cfg.device.num_inter_threads)
    return Built(graph=graph, ops=ops, saver=saver, init=init, topology=topology,
                 session_config=proto, model_name=spec.name, batch_size=batch_size,
                 image_size=image_size, images_per_step=images_per_step,
                 num_params=num_params)


def run(cfg, log=print):
    """Runs one benchmark.

    Args:
      cfg: a `tfhp.config.BenchmarkConfig`.
      log: called with each line to print.
    Returns:
      The result dict (the JSON line appended to cfg.run.result_file, if set).
    Raises:
      tfhp.config.ConfigError: the configuration cannot work on this machine.
    """
    built = build(cfg)
    ops, saver = built.ops, built.saver
    batch_size, image_size, topology = built.batch_size, built.image_size, built.topology
    images_per_step, num_params = built.images_per_step, built.num_params
    spec = registry.get(built.model_name)
    log('Model: %s  batch size per device: %d  devices: %d  data format: %s  '
        'trainable parameters: %d' % (spec.name, batch_size, topology.num_towers,
                                       cfg.model.data_format, num_params))
    with tf.Session(graph=built.graph, config=built.session_config) as sess:
        sess.run(built.init)
        restored = session_lib.restore_latest(sess, saver, cfg.run.train_dir)
        if restored:
            log('Restored %s' % restored)
        elif cfg.run.eval:
            raise config_lib.ConfigError('--eval: no checkpoint in --train_dir=%s'
                                         % cfg.run.train_dir)
        if cfg.run.eval:
            times, extra = _run_eval(sess, ops, cfg.run, log)
        else:
            times, extra = _run_train(sess, ops, cfg.run, images_per_step, saver,
                                      restored is not None, log)

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
        'mode': 'eval' if cfg.run.eval else 'train',
        'model': spec.name,
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


def _run_train(sess, ops, run_cfg, images_per_step, saver, restored, log):
    if not restored:
        sess.run(ops.post_init_ops)
    session_lib.warm_up(sess, ops.warmup_ops)
    fetches = {'loss': ops.loss}
    if run_cfg.print_training_accuracy:
        fetches.update(top1=ops.top1, top5=ops.top5)
    # Both fetch signatures of the timed loop are run once here: the first run of a new
    # signature builds its executor, which must not be charged to a timed step.
    for i in range(run_cfg.num_warmup_batches):
        sess.run(ops.train_op if i else [ops.train_op, fetches])

    def on_interval(index, durations, values):
        log(_format_interval(index, durations, values, images_per_step, run_cfg.display_every))

    # Checkpoints between chunks of steps, so their writing is not charged to any step.
    chunk = run_cfg.save_model_steps or run_cfg.num_batches
    parts, done = [], 0
    while done < run_cfg.num_batches:
        count = min(chunk, run_cfg.num_batches - done)
        parts.append(session_lib.run_steps(
            sess, ops.train_op, count, images_per_step, interval=run_cfg.display_every,
            interval_fetches=fetches, on_interval=on_interval))
        done += count
        if run_cfg.train_dir:
            log('Saved %s' % session_lib.save(sess, saver, run_cfg.train_dir, ops.global_step))
    final = sess.run(fetches)
    extra = {'final_loss': float(final['loss']), 'global_step': int(sess.run(ops.global_step))}
    if run_cfg.print_training_accuracy:
        extra.update(train_top1=float(final['top1']), train_top5=float(final['top5']))
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

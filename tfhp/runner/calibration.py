"""A compute profile for emulated compute, from a run of the model alone in this process.

`calibrate` times untraced steps, traces one more and writes the layers' times as a
`tfhp.emulation.profile.ComputeProfile`: the layers' ops' traced times, scaled so that they add
up to the untraced step's share of forward and backward time (`profile.from_op_times`).
`python -m tfhp.calibrate` is its command.
"""
import statistics
import time

import tensorflow.compat.v1 as tf

from tfhp.runner import build
from tfhp.runner import resolve
from tfhp import session as session_lib
from tfhp.runner import tower
from tfhp.emulation import profile as profile_lib
from tfhp.ops import scopes


def model_variables(spec, cfg, batch_size, image_size, num_classes):
    """The model's `profile.Variable`s in creation order, built alone in a scratch graph."""
    with tf.Graph().as_default():
        shape = ([batch_size, image_size, image_size, 3] if cfg.model.data_format == 'NHWC' else
                 [batch_size, 3, image_size, image_size])
        model_fn = tower.make_model_fn(spec, num_classes, cfg.model.data_format,
                                       cfg.model.fuse_batchnorm,
                                       slice_bytes=cfg.model.layer_slice_bytes)
        model_fn(tf.zeros(shape), tf.zeros([batch_size], tf.int32))
        trainable = {v.op.name for v in tf.trainable_variables()}
        return [profile_lib.Variable(v.op.name, tuple(v.shape.as_list()),
                                     v.dtype.base_dtype.name, v.op.name in trainable)
                for v in tf.global_variables()]


def calibrate(cfg, steps, warmup_steps):
    """The ComputeProfile of cfg's model, from a run of it alone in this process."""
    built = build.build(cfg)
    with tf.Session(graph=built.graph, config=built.session_config) as sess:
        sess.run(built.init)
        sess.run(built.post_init_ops)
        for _ in range(warmup_steps):
            sess.run(built.ops.train_op)
        times = []
        for _ in range(steps):
            start = time.perf_counter()
            sess.run(built.ops.train_op)
            times.append(time.perf_counter() - start)
        _, metadata = session_lib.run_traced(sess, built.ops.train_op)
    op_seconds = {}
    for device in metadata.step_stats.dev_stats:
        for node in device.node_stats:
            op_seconds[node.node_name] = (op_seconds.get(node.node_name, 0.0) +
                                          node.all_end_rel_micros / 1e6)
    total = sum(op_seconds.values())
    towers = sum(s for name, s in op_seconds.items() if '/forward/' in name or
                 '/backward/' in name)
    update = sum(s for name, s in op_seconds.items() if name.startswith(scopes.APPLY + '/'))
    step_s = statistics.median(times)
    spec = resolve.model_spec(cfg)
    variables = model_variables(spec, cfg, built.batch_size, built.image_size,
                                cfg.model.num_classes)
    return profile_lib.from_op_times(
        cfg.model.name, built.batch_size, variables, op_seconds, step_s * towers / total,
        'traced on this machine: median of %d steps %.4f s, forward+backward %.1f%% and '
        'update %.1f%% of op time' % (steps, step_s, 100.0 * towers / total,
                                       100.0 * update / total),
        apply_s=step_s * update / total)

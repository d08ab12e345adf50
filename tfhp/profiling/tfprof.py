"""Profiling steps with tfprof (TensorFlow's v1 profiler), as tf_cnn_benchmarks' --tfprof_file.

The steps are traced (FULL_TRACE) and added to a `tf.profiler.Profiler`, whose ProfileProto is
written to a file (for the tfprof command line) and whose costliest op types are returned.
"""
import collections

import tensorflow.compat.v1 as tf

OpCost = collections.namedtuple('OpCost', ['name', 'exec_micros', 'num_ops'])  # per op type


def profile_steps(sess, fetches, num_steps, path, top=20):
    """Runs `fetches` num_steps times traced, writes tfprof's ProfileProto to `path`.

    Args:
      sess: a session.
      fetches: what one step runs (e.g. the train op).
      num_steps: steps to profile (each is an extra step: traced steps are slow).
      path: where the ProfileProto goes.
      top: how many op types to return.
    Returns:
      The `top` op types by execution time summed over the steps, costliest first
      (`OpCost`s).
    """
    profiler = tf.profiler.Profiler(sess.graph)
    for step in range(num_steps):
        metadata = tf.RunMetadata()
        sess.run(fetches, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE),
                 run_metadata=metadata)
        profiler.add_step(step, metadata)
    options = (tf.profiler.ProfileOptionBuilder(
        tf.profiler.ProfileOptionBuilder.time_and_memory()).with_empty_output()
               .order_by('micros').with_max_depth(top).build())
    by_type = profiler.profile_operations(options)
    with open(path, 'wb') as f:
        f.write(profiler.serialize_to_string())
    costs = [OpCost(node.name, node.exec_micros, len(node.graph_nodes))
             for node in by_type.children]
    return sorted(costs, key=lambda c: -c.exec_micros)[:top]

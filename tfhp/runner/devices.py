"""Questions only the runtime can answer: which devices exist and what their kernels accept.

Used to refuse a configuration before any graph is built (a GPU asked for and absent, NCHW on
a build whose CPU kernels reject it, XLA where the build does not compile). Each probe runs a
tiny graph once per process and caches the answer.
"""
import contextlib
import functools

import tensorflow.compat.v1 as tf

from tfhp import config as config_lib


def num_gpus():
    """Number of GPUs TensorFlow can see."""
    return len(tf.config.list_physical_devices('GPU'))


@functools.lru_cache(maxsize=None)
def supports_nchw(device):
    """Whether convolution and pooling run in NCHW on `device` ('cpu' or 'gpu').

    Asked of the runtime rather than assumed: a tiny NCHW conv + max-pool is run in a
    throwaway graph, so a build whose kernels accept NCHW is not refused.
    """
    graph = tf.Graph()
    with graph.as_default(), tf.device('/%s:0' % device):
        x = tf.zeros([1, 1, 4, 4])
        y = tf.nn.conv2d(x, tf.zeros([1, 1, 1, 1]), [1, 1, 1, 1], 'SAME', data_format='NCHW')
        y = tf.nn.max_pool2d(y, [1, 1, 2, 2], [1, 1, 2, 2], 'VALID', data_format='NCHW')
    try:
        with tf.Session(graph=graph, config=tf.ConfigProto(allow_soft_placement=False)) as sess:
            sess.run(y)
    except (tf.errors.UnimplementedError, tf.errors.InvalidArgumentError):
        return False
    return True


def _compiled_op_types(device, jit_scope, auto_jit):
    """Op types of the partition graphs of a tiny matmul step run on `device`, marked for XLA
    by a jit scope and/or under the session's global JIT level."""
    graph = tf.Graph()
    with graph.as_default(), tf.device('/%s:0' % device):
        # Not a constant: grappler would fold the whole step away before XLA saw it.
        x = tf.random.uniform([8, 8], seed=1)
        scope = tf.xla.experimental.jit_scope() if jit_scope else contextlib.nullcontext()
        with scope:
            y = tf.reduce_sum(tf.nn.relu(tf.matmul(x, x)) * 2.0 + 1.0)
    config = tf.ConfigProto(allow_soft_placement=False)
    if auto_jit:
        config.graph_options.optimizer_options.global_jit_level = tf.OptimizerOptions.ON_1
    metadata = tf.RunMetadata()
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(y, options=tf.RunOptions(output_partition_graphs=True), run_metadata=metadata)
    return {node.op for partition in metadata.partition_graphs for node in partition.node}


# The ops a session runs in place of a compiled cluster.
_XLA_OPS = {'_XlaCompile', '_XlaRun', 'XlaLaunch'}


@functools.lru_cache(maxsize=None)
def supports_xla_compile(device):
    """Whether ops marked by XLA's jit scope are compiled on `device` ('cpu' or 'gpu').

    Asked of the runtime: the tiny step must run as a compiled cluster.
    """
    try:
        return bool(_compiled_op_types(device, jit_scope=True, auto_jit=False) & _XLA_OPS)
    except tf.errors.OpError:
        return False


@functools.lru_cache(maxsize=None)
def supports_auto_jit(device):
    """Whether the session's global JIT level makes XLA cluster unmarked ops on `device`.

    On CPUs TensorFlow auto-clusters only when TF_XLA_FLAGS holds --tf_xla_cpu_global_jit
    when it starts (the `tfhp` command sets it for --xla); asked of the runtime, not assumed.
    """
    try:
        return bool(_compiled_op_types(device, jit_scope=False, auto_jit=True) & _XLA_OPS)
    except tf.errors.OpError:
        return False


def check(device_config, model_config, xla_config=None):
    """Raises ConfigError if the devices of this machine cannot run the configuration."""
    if device_config.device == 'gpu':
        found = num_gpus()
        if found < device_config.num_devices:
            raise config_lib.ConfigError(
                '--device=gpu --num_devices=%d but TensorFlow sees %d GPU(s); use --device=cpu'
                % (device_config.num_devices, found))
    if model_config.data_format == 'NCHW' and not supports_nchw(device_config.device):
        raise config_lib.ConfigError(
            '--data_format=NCHW: this TensorFlow build\'s %s kernels reject NCHW convolution '
            'or pooling; use --data_format=NHWC' % device_config.device.upper())
    if xla_config is None:
        return
    device = device_config.device
    if xla_config.xla_compile and not supports_xla_compile(device):
        raise config_lib.ConfigError(
            '--xla_compile: this TensorFlow build does not compile ops with XLA on the %s'
            % device.upper())
    if xla_config.xla and not supports_auto_jit(device):
        raise config_lib.ConfigError(
            '--xla: this TensorFlow build does not auto-cluster ops with XLA on the %s (on a '
            'CPU, TF_XLA_FLAGS must hold --tf_xla_cpu_global_jit before TensorFlow starts, as '
            'the tfhp command sets it); use --xla_compile' % device.upper())

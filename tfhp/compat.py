"""Graph-mode set-up for entry points (CLI, experiments, tests); library modules never call it."""
import tensorflow.compat.v1 as tf


def enable_graph_mode():
    """TF1 graph semantics with resource variables, and TF's Python logger quieted.

    Resource variables are kept (disable_v2_behavior would turn them off) because they are
    TensorFlow's supported kind and read consistently across devices.
    """
    tf.get_logger().setLevel('ERROR')
    tf.disable_v2_behavior()
    tf.enable_resource_variables()

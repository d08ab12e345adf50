"""Writing graphs: the GraphDef a run builds, and the per-device graphs the runtime runs.

`write_graph(graph, path)` writes the client's graph (tf_cnn_benchmarks' --graph_file);
`write_partition_graphs(run_metadata, prefix)` writes the graphs of one step as the runtime
partitioned (one per device, with the _Send/_Recv pairs between them) and optimised them
(--partitioned_graph_file_prefix): what actually ran, after grappler and XLA clustering.
A path ending in 'txt' gets a text proto, any other a binary one.
"""
import os

import tensorflow.compat.v1 as tf


def _write(graph_def, path):
    directory, name = os.path.split(os.path.abspath(path))
    tf.io.write_graph(graph_def, directory, name, as_text=name.endswith('txt'))
    return path


def write_graph(graph, path):
    """Writes `graph`'s GraphDef to `path`; returns the path."""
    return _write(graph.as_graph_def(), path)


def device_suffix(device):
    """A file-name-safe form of a device name ('/job:localhost/replica:0/task:0/device:CPU:0'
    -> '_job_localhost_replica_0_task_0_device_CPU_0')."""
    return device.replace('/', '_').replace(':', '_')


def write_partition_graphs(run_metadata, prefix):
    """Writes each partition graph of a step run with output_partition_graphs.

    The file of a partition is <prefix><device>, with the prefix's extension (if any) moved
    after the device: '/tmp/part.pbtxt' -> '/tmp/part_job_..._CPU_0.pbtxt'.

    Args:
      run_metadata: the RunMetadata of a `session.run` with
        `RunOptions(output_partition_graphs=True)`.
      prefix: the path prefix.
    Returns:
      The paths written, one per device.
    """
    base, ext = os.path.splitext(prefix)
    paths = []
    for graph_def in run_metadata.partition_graphs:
        device = next((node.device for node in graph_def.node if node.device), 'unplaced')
        paths.append(_write(graph_def, '%s%s%s' % (base, device_suffix(device), ext)))
    return paths

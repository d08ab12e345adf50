"""tf_cnn_benchmarks' output tools: --graph_file, --partitioned_graph_file_prefix, --tfprof_file
and --use_chrome_trace_format=false, each read back."""
import glob
import re

import pytest
import tensorflow.compat.v1 as tf
from google.protobuf import text_format
from tensorflow.core.framework import step_stats_pb2  # pylint: disable=g-direct-tensorflow-import
from tensorflow.core.profiler import tfprof_log_pb2  # pylint: disable=g-direct-tensorflow-import

from tests import testing
from tfhp.runner import benchmark
from tfhp import config as config_lib


def _graph_def(path):
    graph_def = tf.GraphDef()
    with open(path, 'rb') as f:
        data = f.read()
    if path.endswith('txt'):
        text_format.Parse(data.decode(), graph_def)
    else:
        graph_def.ParseFromString(data)
    return graph_def


@pytest.mark.parametrize('name', ['graph.pb', 'graph.pbtxt'])
def test_graph_file_holds_the_built_graph(tmp_path, name):
    path = str(tmp_path / name)
    benchmark.run(testing.small_config(num_batches=1, profile={'graph_file': path}),
                  log=lambda _: None)
    names = {node.name for node in _graph_def(path).node}
    assert 'train_op' in names and any(n.startswith('tower_0/forward/') for n in names)


def test_partitioned_graphs_one_per_device_with_their_transfers(tmp_path):
    prefix = str(tmp_path / 'part.pbtxt')
    lines = []
    cfg = testing.small_config(num_batches=1, device={'num_devices': 2},
                               replication={'variable_update': 'replicated'},
                               profile={'partitioned_graph_file_prefix': prefix})
    result = benchmark.run(cfg, log=lines.append)
    paths = sorted(glob.glob(str(tmp_path / 'part*.pbtxt')))
    assert [re.search(r'CPU_(\d)\.pbtxt$', p).group(1) for p in paths] == ['0', '1']
    for path in paths:
        assert {'_Send', '_Recv'} <= {node.op for node in _graph_def(path).node}
    assert sum(line.startswith('Wrote partitioned graph') for line in lines) == 2
    assert result['num_steps'] == 1  # the step that wrote them is extra and untimed


def test_tfprof_profiles_extra_steps_and_lists_the_costliest_ops(tmp_path):
    path = str(tmp_path / 'profile.pb')
    lines = []
    result = benchmark.run(testing.small_config(model='lenet', image_size=28, num_batches=2,
                                                profile={'tfprof_file': path}),
                           log=lines.append)
    profile = tfprof_log_pb2.ProfileProto()
    with open(path, 'rb') as f:
        profile.ParseFromString(f.read())
    assert sorted(profile.steps) == list(range(config_lib.PROFILED_STEPS))
    assert any(node.name.startswith('tower_0/forward/conv') for node in profile.nodes.values())
    costs = lines[lines.index(next(l for l in lines if l.startswith('tfprof profile'))) + 1:]
    assert re.match(r' +[0-9.]+  \w+ \(\d+ ops\)$', costs[0])
    # The profiled steps ran besides the timed ones: 1 warm-up + 10 profiled + 2 timed.
    assert result['num_steps'] == 2 and result['global_step'] == 13


def test_trace_without_the_chrome_format_is_the_step_stats(tmp_path):
    path = str(tmp_path / 'step.txt')
    benchmark.run(testing.small_config(num_batches=2, profile={
        'trace_file': path, 'use_chrome_trace_format': False}), log=lambda _: None)
    stats = text_format.Parse(open(path).read(), step_stats_pb2.StepStats())
    assert any(node.node_name.startswith('tower_0/') for device in stats.dev_stats
               for node in device.node_stats)


def test_output_paths_are_checked_before_any_work(tmp_path):
    for flag in ('graph_file', 'tfprof_file', 'partitioned_graph_file_prefix'):
        cfg = testing.small_config(profile={flag: str(tmp_path / 'missing' / 'x')})
        with pytest.raises(config_lib.ConfigError, match='--%s=.*does not exist' % flag):
            config_lib.check_output_paths(cfg, writes_train_dir=True)

"""A between-graph worker's traced step (--trace_file): a traced run through the task's session
(its hooks see the same run), every worker tracing the step and the chief writing it."""
import os
import time
import types

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp import session as session_lib
from tfhp.cluster import task_session
from tfhp.cluster import tracing
from tfhp.config import profile as profile_lib
from tfhp.ops import session_hooks
from tfhp.profiling import capture
from tfhp.profiling import graphs


class _Seen(tf.train.SessionRunHook):
    """Keeps the RunMetadata of each run and feeds `feeds` to each."""

    def __init__(self, feeds):
        self.metadata, self._feeds = [], feeds

    def before_run(self, run_context):
        return tf.train.SessionRunArgs([], feed_dict=self._feeds)

    def after_run(self, run_context, run_values):
        self.metadata.append(run_values.run_metadata)


def _traced_run():
    """(value, RunMetadata, what the hook saw) of one traced run through a TaskSession, fed by
    the caller (x = 3) and by a hook (y = 5)."""
    with tf.Graph().as_default():
        x, y = tf.placeholder(tf.float32, []), tf.placeholder(tf.float32, [])
        fetch = x * tf.Variable(2.0) + y
        hook = _Seen({y: 5.0})
        sess = task_session.TaskSession('', tf.ConfigProto(), tf.train.Saver(), True, None,
                                        [hook], timeout_s=5.0)
        value, metadata = session_lib.run_traced(sess, fetch, feed_dict={x: 3.0})
    return value, metadata, hook.metadata


def test_a_traced_run_through_a_task_session_returns_its_step_stats():
    value, metadata, seen = _traced_run()
    assert value == 11.0
    assert any(d.node_stats for d in metadata.step_stats.dev_stats)
    assert metadata.partition_graphs
    assert seen == [metadata]


def _cfg(task_index, trace_file, partitioned=None):
    return types.SimpleNamespace(
        profile=profile_lib.ProfileConfig(trace_file=trace_file, trace_step=3,
                                          partitioned_graph_file_prefix=partitioned),
        cluster=types.SimpleNamespace(task_index=task_index))


def test_every_worker_traces_the_step_and_the_chief_writes_it(tmp_path):
    # No --trace_file: no traced step.
    assert not tracing.step_tracing(_cfg(0, None), print, [], None)
    _, metadata, _ = _traced_run()
    for task_index in (0, 1):
        path = str(tmp_path / ('%d.json' % task_index))
        lines = []
        traced = tracing.step_tracing(_cfg(task_index, path), lines.append, [], None)
        assert traced['trace_step'] == 3  # each worker runs the extra step: in pairs
        traced['on_trace'](3, metadata)
        written = os.path.exists(path) and os.path.exists(path + capture.RUN_METADATA_SUFFIX)
        assert written == (task_index == 0) and bool(lines) == (task_index == 0)
    assert capture.load_run_metadata(str(tmp_path / '0.json') + capture.RUN_METADATA_SUFFIX)


def test_with_task_in_the_path_every_worker_writes_its_own_trace(tmp_path):
    _, metadata, _ = _traced_run()
    path = str(tmp_path / 'step.{task}.json')
    for task_index in (0, 1, 2):
        tracing.step_tracing(_cfg(task_index, path), print, [], None)['on_trace'](3, metadata)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ['step.%d.json%s' % (i, s) for i in (0, 1, 2)
                       for s in ('', capture.RUN_METADATA_SUFFIX)]


def test_the_traced_step_writes_its_partition_graphs_chief_or_each_worker(tmp_path):
    _, metadata, _ = _traced_run()
    devices = {graphs.device_suffix(g.node[0].device) for g in metadata.partition_graphs}
    for prefix, writers in (('chief.pbtxt', [0]), ('w{task}.pbtxt', [0, 1])):
        for task_index in (0, 1):
            # Without --trace_file the extra step runs for the graphs alone.
            traced = tracing.step_tracing(_cfg(task_index, None, str(tmp_path / prefix)),
                                          print, [], None)
            assert traced['trace_step'] == 3
            traced['on_trace'](3, metadata)
        stem = prefix.split('.')[0].replace('{task}', '%d')
        expected = {(stem % i if '%d' in stem else stem) + d + '.pbtxt'
                    for i in writers for d in devices}
        assert expected <= {p.name for p in tmp_path.iterdir()}
    assert len(list(tmp_path.iterdir())) == 3 * len(devices)


def test_the_chief_writes_an_output_and_with_task_in_its_path_every_worker():
    assert tracing.task_path('/t/g.pb', 0) == '/t/g.pb'
    assert tracing.task_path('/t/g.pb', 1) is None
    assert tracing.task_path('/t/g.{task}.pb', 2) == '/t/g.2.pb'
    assert tracing.task_path(None, 0) is None


def _sleep(seconds, name):
    return tf.py_func(lambda: np.float32(time.sleep(seconds) or 0.0), [], tf.float32,
                      stateful=True, name=name)


class _Settling(session_hooks.RunInLoops):
    """Loops whose work for a step goes on for settle_s after it (as priority pushes do)."""

    def __init__(self, loops, settle_s):
        super().__init__(loops)
        self._settle_s = settle_s

    def settle(self, session):
        time.sleep(self._settle_s)


@pytest.mark.parametrize('settle_s', [0.0, 0.3])
def test_background_runs_that_overlap_the_traced_step_join_its_trace(tmp_path, settle_s):
    path = str(tmp_path / 'step.json')
    # A task's server, as a worker has: an in-process session traces one run at a time.
    server = tf.train.Server.create_local_server()
    with tf.Graph().as_default():
        step = _sleep(0.05, 'step')
        hook = _Settling([_sleep(0.02, 'background').op], settle_s)
        sess = task_session.TaskSession(server.target, tf.ConfigProto(),
                                        tf.train.Saver([tf.Variable(0)]), True, None, [hook],
                                        timeout_s=5.0)
        traced = tracing.step_tracing(_cfg(0, path), print, [hook], sess)
        runs = []
        session_lib.run_steps(sess, step, 3, 1, run=lambda f: runs.append(sess.run(f)),
                              **dict(traced, trace_step=2))
        sess.close()
    assert len(runs) == 4  # 3 timed steps and the one before the traced one
    metadata = capture.load_run_metadata(path)
    lanes = [d.device for d in metadata.step_stats.dev_stats]
    background = [d for d in lanes if d.endswith(' [background]')]
    assert background and len(background) < len(lanes)
    assert not hook.loop_traces(0.0)  # tracing ended with the traced step
    # The runs of the time the step took to settle are merged too: later than its own end.
    step_end = max(n.all_start_micros + n.all_end_rel_micros
                   for d in metadata.step_stats.dev_stats if ' [' not in d.device
                   for n in d.node_stats)
    last = max(n.all_start_micros for d in metadata.step_stats.dev_stats
               if d.device.endswith(' [background]') for n in d.node_stats)
    assert (last > step_end + 0.1e6) == (settle_s > 0)

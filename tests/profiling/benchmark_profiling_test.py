"""The runner's profiling: a traced step in the timed loop, TensorBoard summaries, bad flags."""
import collections
import glob
import os
import time

import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import benchmark
from tfhp import config as config_lib
from tfhp import session as session_lib
from tfhp.profiling import analysis
from tfhp.profiling import capture
from tfhp.profiling import summaries


def test_run_steps_calls_observers_and_traces_one_extra_step():
    with tf.Graph().as_default():
        counter = tf.Variable(0, dtype=tf.int64)
        train_op = counter.assign_add(1)
        calls, traces = [], []

        def on_trace(i, metadata):
            traces.append((i, len(metadata.step_stats.dev_stats)))
            time.sleep(0.5)  # e.g. writing a big trace: charged to neither a step nor wall time
        every_2 = session_lib.Observer(2, {'n': counter.read_value()},
                                       lambda i, durations, v: calls.append((i, len(durations))))
        every_3 = session_lib.Observer(3, [], lambda i, durations, v: calls.append((i, v)))
        assert len(session_lib.step_fetches(train_op, [every_2, every_3])) == 4
        with tf.Session() as sess:
            sess.run(counter.initializer)
            times = session_lib.run_steps(
                sess, train_op, 4, images_per_step=8, observers=[every_2, every_3],
                first_step=5, trace_step=7, on_trace=on_trace)
            assert sess.run(counter) == 5   # 4 timed steps and the traced one
    # Steps 5..8: 6 is due for both observers, 8 for every_2; 7 was traced first.
    assert calls == [(6, 2), (6, []), (8, 4)]
    assert traces == [(7, 1)]
    assert times.num_steps == 4 and times.images_per_step == 8
    assert max(times.durations) < 0.5 and times.wall_time < 0.5


def test_traced_step_is_extra_and_untimed(tmp_path):
    (tmp_path / 'trace').mkdir()  # an output's directory must exist (tfhp.config.paths)
    trace = str(tmp_path / 'trace' / 'step.json')
    lines = []
    cfg = testing.small_config(num_batches=3, profile={'trace_file': trace, 'trace_step': 2})
    result = benchmark.run(cfg, log=lines.append)
    assert result['num_steps'] == 3
    # 1 warm-up + 3 timed + the traced one.
    assert result['global_step'] == 5
    assert any(l.startswith('Traced step 2: %s' % trace) for l in lines)
    figures = analysis.analyze(capture.load_run_metadata(trace))
    assert figures.devices[0].stages['apply'] > 0


def _summaries(train_dir):
    """{tag: [step, ...]} of every summary value written, and whether a graph was written."""
    tags, graph = collections.defaultdict(list), False
    for path in glob.glob(os.path.join(train_dir, 'events.out.tfevents.*')):
        for event in tf.train.summary_iterator(path):
            graph = graph or bool(event.graph_def)
            for value in event.summary.value:
                tags[value.tag].append(event.step)
    return tags, graph


@pytest.mark.parametrize('verbosity', [1, 3])
def test_summaries_every_n_steps(tmp_path, verbosity):
    cfg = testing.small_config(num_batches=4, run={'train_dir': str(tmp_path)},
                               profile={'save_summaries_steps': 2,
                                        'summary_verbosity': verbosity})
    benchmark.run(cfg, log=lambda _: None)
    tags, graph = _summaries(str(tmp_path))
    assert graph
    scalars = {'loss', 'learning_rate', 'images_per_sec'}
    variables = ['squeeze/weights', 'squeeze/biases', 'hidden/weights', 'hidden/biases',
                 'logits/weights', 'logits/biases']
    gradients = ({'gradient_norm'} | {'gradient_norm/' + v for v in variables} |
                 {'gradient/' + v for v in variables}) if verbosity == 3 else set()
    assert set(tags) == scalars | gradients
    # Timed steps 2 and 4, written at increasing global steps.
    for steps in tags.values():
        assert len(steps) == 2 and steps[0] < steps[1]


def test_traced_step_run_metadata_goes_to_the_summaries(tmp_path):
    with tf.Graph().as_default():
        counter = tf.Variable(0, dtype=tf.int64)
        with tf.Session() as sess:
            sess.run(counter.initializer)
            metadata = session_lib.run_traced(sess, counter.assign_add(1))[1]
        writer = tf.summary.FileWriter(str(tmp_path))
        summaries.run_metadata_writer(writer, lambda: 7)(3, metadata)
        writer.close()
    [path] = glob.glob(str(tmp_path / 'events.out.tfevents.*'))
    [tagged] = [(event.step, event.tagged_run_metadata) for event in
                tf.train.summary_iterator(path) if event.HasField('tagged_run_metadata')]
    assert tagged[0] == 7 and tagged[1].tag == 'step_3'
    assert tf.RunMetadata.FromString(tagged[1].run_metadata) == metadata


@pytest.mark.parametrize('sections, flag', [
    ({'profile': {'trace_file': 't.json', 'trace_step': 4}}, '--trace_step=4'),
    ({'profile': {'trace_file': 't.json'}, 'run': {'eval': True, 'train_dir': '/tmp/x'}},
     '--trace_file'),
    ({'profile': {'trace_memory': True}}, '--trace_memory'),
    ({'profile': {'save_summaries_steps': 5}}, '--save_summaries_steps'),
])
def test_profiling_flags_that_cannot_work_are_refused(sections, flag):
    with pytest.raises(config_lib.ConfigError, match=flag):
        testing.small_config(num_batches=3, **sections)


def test_summary_verbosity_range():
    with pytest.raises(config_lib.ConfigError, match='--summary_verbosity'):
        config_lib.ProfileConfig(summary_verbosity=4)

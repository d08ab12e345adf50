"""Session settings and the one timed loop: the process-wide thread pools are not silently
resized; run_steps runs through a given run and stops when told."""
import warnings

import pytest
import tensorflow.compat.v1 as tf

from tfhp import session


def test_other_thread_pool_sizes_in_one_process_warn(monkeypatch):
    monkeypatch.setattr(session, '_process_thread_pools', [])
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        proto = session.config_proto(num_intra_threads=2, num_inter_threads=2)
        session.config_proto(num_cpu_devices=4, num_intra_threads=2, num_inter_threads=2)
    assert proto.intra_op_parallelism_threads == 2
    with pytest.warns(RuntimeWarning,
                      match=r'num_intra_threads=1.*first session.*\(2, 2\)'):
        session.config_proto(num_intra_threads=1, num_inter_threads=2)


def test_run_steps_takes_a_run_and_stops_when_on_step_says():
    with tf.Graph().as_default():
        counter = tf.Variable(0, dtype=tf.int64)
        step = counter.assign_add(1)
        with tf.Session() as sess:
            sess.run(counter.initializer)
            ran, seen = [], []

            def run(fetches):
                ran.append(fetches)
                return sess.run(fetches)

            def on_step(value):
                seen.append(int(value))
                return value >= 4  # e.g. the job's end step, fetched with the step

            times = session.run_steps(sess, step, None, 8, run=run, on_step=on_step)
            assert seen == [1, 2, 3, 4] and times.num_steps == 4 and len(ran) == 4
            assert times.images_per_sec > 0
            # A step limit still holds when on_step never says stop.
            times = session.run_steps(sess, step, 2, 8, on_step=lambda value: False)
            assert times.num_steps == 2 and int(sess.run(counter)) == 6


def test_the_inter_op_pool_is_two_per_core_only_when_the_graph_preprocesses():
    assert session.inter_op_threads(0, preprocesses_in_graph=True, num_cores=3) == 6
    assert session.inter_op_threads(0, preprocesses_in_graph=False, num_cores=3) == 0
    assert session.inter_op_threads(7, preprocesses_in_graph=True, num_cores=3) == 7

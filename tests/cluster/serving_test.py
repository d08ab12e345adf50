"""State that outlives its client: lingering ps tasks (--linger_s) and a client that reconnects
to save what they hold (`tfhp.reconnect`); resource containers that keep two clients' variables
apart on one ps, and a reset that frees one container's (`tfhp.cluster.container_client`)."""
import os
import time

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests.cluster import jobs
from tfhp import config as config_lib
from tfhp import reconnect
from tfhp import search
from tfhp.data import synthetic
from tfhp.launcher import plan

pytestmark = [pytest.mark.cluster]


def test_a_client_that_never_saved_reconnects_and_saves_what_the_ps_holds(tmp_path):
    # This process is the client: the job runs on the machine's network.
    job = jobs.hand_started(tmp_path, 1, 1, ['--num_batches=3', '--peer_timeout_s=10',
                                             '--linger_s=120'], private=False)
    try:
        job.start_all()
        ended = job.wait([('worker', 0)], jobs.JOB_TIMEOUT_S)
        assert ended[('worker', 0)][0] == 0, job.log(('worker', 0))[-3000:]
        # The worker is gone and wrote no checkpoint; the ps lingers with its variables.
        cfg = config_lib.BenchmarkConfig(
            model=config_lib.ModelConfig(name='trivial', image_size=8, batch_size=2,
                                         num_classes=10),
            optimizer=config_lib.OptimizerConfig(weight_decay=0.0),
            run=config_lib.RunConfig(num_batches=3, num_warmup_batches=2),
            cluster=config_lib.ClusterConfig(
                job_name='worker', ps_hosts=(job.address(('ps', 0)),),
                worker_hosts=(job.address(('worker', 0)),), peer_timeout_s=10))
        released = time.monotonic()
        values, path = reconnect.save_live(cfg, str(tmp_path / 'live' / 'model.ckpt'))
        ps_end = job.wait([('ps', 0)], 30)
        ps_end_s = time.monotonic() - released
    finally:
        job.end_all()
    # The ps task exited by itself, cleanly, soon after the release (not at --linger_s).
    assert ps_end[('ps', 0)][0] == 0, job.log(('ps', 0))[-3000:]
    assert ps_end_s < 30
    assert 'lingering ended (released)' in job.log(('ps', 0))
    # Trained values, not initial ones: the global step is the job's last (2 warm-up + 3).
    assert int(values['global_step']) == 5
    reader = tf.train.load_checkpoint(path)
    assert sorted(reader.get_variable_to_shape_map()) == sorted(values)
    for name, value in values.items():
        np.testing.assert_array_equal(reader.get_tensor(name), value)


def _client(container, value):
    """A client's graph: variable 'v' on ps 0 in `container`; (graph, assign op, read)."""
    graph = tf.Graph()
    with graph.as_default(), tf.container(container), tf.device('/job:ps/task:0'):
        v = tf.get_variable('v', initializer=tf.zeros([4]), use_resource=True)
        assign = v.assign(tf.fill([4], value))
    return graph, assign, v.read_value()


def _ps_with_two_clients(address, names):
    """An in-process ps server at `address` and two clients that set their 'v' on it, each in
    its own container (`names`): 1.0 and 2.0; (server, {name: client})."""
    server = tf.train.Server(tf.train.ClusterSpec({'ps': [address]}), job_name='ps',
                             task_index=0, start=True)
    clients = {name: _client(name, value) for name, value in zip(names, (1.0, 2.0))}
    for graph, assign, _ in clients.values():
        with tf.Session(server.target, graph=graph) as sess:
            sess.run(assign)
    return server, clients


def _reads(server, clients):
    """{name: the value each client reads, None where its container is gone}."""
    reads = {}
    for name, (graph, _, read) in clients.items():
        with tf.Session(server.target, graph=graph) as sess:
            try:
                reads[name] = sess.run(read).tolist()
            except tf.errors.FailedPreconditionError:
                reads[name] = None
    return reads


def test_two_clients_in_two_containers_on_one_ps_stay_apart_and_a_reset_frees_one():
    server, clients = _ps_with_two_clients('127.0.0.1:%d' % plan.free_ports(1)[0],
                                           ('point_a', 'point_b'))
    # Same name, same device: each client reads its own container's variable.
    assert _reads(server, clients) == {'point_a': [1.0] * 4, 'point_b': [2.0] * 4}
    tf.Session.reset(server.target, ['point_a'])
    assert _reads(server, clients) == {'point_a': None, 'point_b': [2.0] * 4}


def test_a_search_of_parallel_clients_ranks_its_points_and_the_ps_memory_stays_flat(tmp_path):
    data = str(tmp_path / 'data')
    synthetic.generate(data, num_classes=4, image_size=8, train_examples=400,
                       validation_examples=100, train_shards=1, validation_shards=1)
    points = [{'learning_rate': '0.02'}, {'learning_rate': '0.2'}]
    record = search.search(points, [
        '--model=trivial', '--image_size=8', '--batch_size=16', '--data_dir=' + data,
        '--random_crop_flip=false', '--num_batches=10', '--num_warmup_batches=0',
        # 100 images in batches of 10: a client builds ops of its own for each record of an
        # evaluation batch, so batches of 50 took it longer to build than its training.
        '--eval_during_training_every_n_steps=10', '--eval_batch_size=10',
        '--num_eval_batches=10', '--peer_timeout_s=20'], repeats=2, parallel=2,
                           timeout_s=200, log=lambda line: None)
    assert [r['error'] for r in record['runs']] == [None] * 4
    assert sorted(row['runs'] for row in record['ranking']) == [2, 2]
    medians = [row['median'] for row in record['ranking']]
    assert medians == sorted(medians, reverse=True)
    # Every client's container was reset: the ps holds no more after the last than after the
    # first (within 32 MiB of the allocator's noise).
    after = [m[0] for m in record['ps_rss_mb'][1:]]
    assert after[-1] - after[0] < 32, after
    # Released at the end, the ps task exited cleanly.
    assert record['ps_exit_codes'] == [0]


def test_the_search_resets_the_container_a_failed_client_left_and_no_other(tmp_path):
    address, slot = ['127.0.0.1:%d' % p for p in plan.free_ports(2)]
    server, clients = _ps_with_two_clients(address, ('point0-round0', 'point1-round0'))
    # point0-round0's client died before its reset; the search resets from its slot.
    argv = plan.task_commands(0, 1, ['--peer_timeout_s=10'], str(tmp_path), hosts={
        'worker': [slot]})[('worker', 0)] + ['--ps_hosts=' + address,
                                              '--container=point0-round0']
    lines = []
    assert search.reset_client_container(argv, plan.task_environment(os.environ), 60,
                                         lines.append), lines
    assert _reads(server, clients) == {'point0-round0': None, 'point1-round0': [2.0] * 4}

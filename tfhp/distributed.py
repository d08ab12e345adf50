"""Runs one task of a multi-process job: a serving task, a between-graph worker, or the client.

Roles (`ClusterConfig.job_name`, `graph_mode`):
  ps tasks, and in-graph workers other than the client, only serve: they hold variables (or
    run towers) for others and exit once every task they serve has signalled done
    (`servers.serve_until_done`), so a finished job leaves no process behind.
  between-graph workers each build their own graph (`benchmark.build` on a
    `Topology.between_graph`) and train in a `MonitoredSession`; the chief (worker 0)
    initialises or restores from --train_dir and writes checkpoints and summaries.
  the in-graph client (the controller, or worker 0) builds one graph with towers on every
    worker and runs the ordinary benchmark loop through its server (`benchmark.run`).

When a between-graph run ends: synchronous steps (parameter_server, distributed_replicated) end
for every worker at the same global step, start + warm-up + num_batches, where start is the step
of the latest checkpoint in --train_dir when the task starts (0 without one): a replica that
stopped by its own count while another still needed it would leave that one waiting forever.
Asynchronous and all-reduce workers each run warm-up + num_batches steps of their own.

The result of a worker adds to the benchmark's figures: wall-clock times (epoch seconds) of its
session start and first step and the end of every timed step (the launcher's cluster figures are
computed from them), the global step rate it saw, and its dropped (late) gradients and images.
"""
import time

import tensorflow.compat.v1 as tf

from tfhp import benchmark
from tfhp import session as session_lib
from tfhp import timing
from tfhp import topology as topology_lib
from tfhp.cluster import servers
from tfhp.cluster import sessions
from tfhp.replication import collective_allreduce

# Variable updates whose synchronous steps end at a global step shared by every worker.
_SYNC_BY_GLOBAL_STEP = ('parameter_server', 'distributed_replicated')


class _DelayHook(tf.train.SessionRunHook):
    """Sleeps before every step: straggler injection for experiments."""

    def __init__(self, delay_s):
        self._delay_s = delay_s

    def before_run(self, run_context):
        time.sleep(self._delay_s)


def _client(cluster):
    """(job, index) of the in-graph client."""
    return ('controller', 0) if cluster.controller_host else ('worker', 0)


def _sender_id(cluster, job_name, task_index):
    """Id a task signals done with: its worker index, or num_workers for the controller."""
    return cluster.num_workers if job_name == 'controller' else task_index


def _serving_tasks(cluster):
    """(job, index) of every task that only serves, for this job's graph mode."""
    tasks = [('ps', i) for i in range(len(cluster.ps_hosts))]
    if cluster.graph_mode == 'in_graph':
        client = _client(cluster)
        tasks += [('worker', w) for w in range(cluster.num_workers) if ('worker', w) != client]
    return tasks


def _server_proto(cfg, collective):
    num_devices = cfg.device.num_devices if (
        cfg.cluster.job_name == 'worker' and cfg.device.device == 'cpu') else 1
    proto = session_lib.config_proto(num_cpu_devices=num_devices,
                                     num_intra_threads=cfg.device.num_intra_threads,
                                     num_inter_threads=cfg.device.num_inter_threads)
    if collective:
        proto.experimental.collective_group_leader = collective_allreduce.GROUP_LEADER
    return proto


def checkpoint_step(train_dir):
    """Global step of the latest checkpoint in train_dir, 0 without one."""
    path = tf.train.latest_checkpoint(train_dir) if train_dir else None
    return int(path.rsplit('-', 1)[1]) if path else 0


def run(cfg, log=print):
    """Runs this process's task of the cluster `cfg.cluster` describes.

    Args:
      cfg: a `tfhp.config.BenchmarkConfig` with a cluster.
      log: called with each line to print.
    Returns:
      The result dict of a worker or client (also appended to cfg.run.result_file); a serving
      task returns {'job_name', 'task_index', 'served': True}.
    Raises:
      servers.ClusterError: a peer did not answer, or a served task vanished.
    """
    cluster = cfg.cluster
    task = (cluster.job_name, cluster.task_index)
    if task in _serving_tasks(cluster):
        return _serve(cfg, log)
    if cluster.graph_mode == 'in_graph':
        return _run_in_graph_client(cfg, log)
    return _run_worker(cfg, log)


def _serve(cfg, log):
    cluster = cfg.cluster
    server = servers.start_server(cluster, _server_proto(cfg, collective=False))
    if cluster.graph_mode == 'in_graph':
        job, index = _client(cluster)
        senders = {_sender_id(cluster, job, index): cluster.hosts(job)[index]}
    else:
        senders = dict(enumerate(cluster.worker_hosts))
    log('%s task %d serving at %s until %d task(s) are done'
        % (cluster.job_name, cluster.task_index,
           cluster.hosts(cluster.job_name)[cluster.task_index], len(senders)))
    gone = servers.serve_until_done(server, cluster, senders, log)
    if gone:
        raise servers.ClusterError('%s task %d: %s stopped without finishing'
                                   % (cluster.job_name, cluster.task_index,
                                      ', '.join(senders[s] for s in gone)))
    log('%s task %d: every task is done; exiting' % (cluster.job_name, cluster.task_index))
    return {'job_name': cluster.job_name, 'task_index': cluster.task_index, 'served': True}


def _run_in_graph_client(cfg, log):
    cluster = cfg.cluster
    job, index = cluster.job_name, cluster.task_index
    proto = _server_proto(cfg, collective=False)
    server = servers.start_server(cluster, proto)
    servers.wait_for_tasks(cluster, _serving_tasks(cluster), cluster.peer_timeout_s)
    topology = topology_lib.Topology.in_graph(cluster.jobs(), job, index, cfg.device.device,
                                              cfg.device.num_devices)
    try:
        result = benchmark.run(cfg, log, topology=topology, target=server.target)
    finally:
        servers.signal_done(server.target, cluster, _serving_tasks(cluster),
                            _sender_id(cluster, job, index))
    return result


def _chief_hooks(cfg, built):
    """Checkpoints (every --save_model_steps/--save_model_secs, and at the end) and summaries."""
    train_dir, hooks = cfg.run.train_dir, []
    if not train_dir:
        return hooks
    steps = cfg.run.save_model_steps
    if cfg.cluster.save_model_secs or not steps:
        # Without an interval: only at the start and the end (CheckpointSaverHook always
        # writes then), as the one-process runner writes one checkpoint per run.
        hooks.append(tf.train.CheckpointSaverHook(
            train_dir, save_secs=cfg.cluster.save_model_secs or 10 ** 9, saver=built.saver))
    if steps:
        hooks.append(tf.train.CheckpointSaverHook(train_dir, save_steps=steps,
                                                  saver=built.saver))
    if built.summary_op is not None:
        hooks.append(tf.train.SummarySaverHook(save_steps=cfg.profile.save_summaries_steps,
                                               output_dir=train_dir,
                                               summary_op=built.summary_op))
    return hooks


def _bytes_by_device(variables):
    """{device: bytes of the variables placed there}: each ps task's share of the traffic."""
    loads = {}
    for v in variables:
        device = tf.DeviceSpec.from_string(v.device).to_string()
        loads[device] = loads.get(device, 0) + v.shape.num_elements() * v.dtype.size
    return loads


def _worker_graph(cfg, topology):
    """The worker's graph (not finalized: the session's hooks add ops) and its extra fetches.

    Returns:
      (built, step_after, final_fetches, placement): step_after reads the global step after a
      step; final_fetches are read once at the end (the manager's counters, the loss, and a
      checksum of the variables, equal on every worker after a synchronous job, which is how a
      run shows that per-worker copies stayed equal); placement is `_bytes_by_device`.
    """
    built = benchmark.build(cfg, topology, finalize=False)
    with built.graph.as_default():
        with tf.control_dependencies([built.ops.train_op]):
            step_after = tf.identity(built.ops.global_step.read_value(), name='step_after')
        final_fetches = {
            'counters': getattr(built.manager, 'counters', dict)(),
            'loss': built.ops.loss,
            'checksum': tf.add_n([tf.reduce_sum(tf.cast(v, tf.float64))
                                  for v in built.manager.trainable_variables(0)])}
        placement = _bytes_by_device(tf.trainable_variables())
    return built, step_after, final_fetches, placement


def _run_worker(cfg, log):
    cluster, index = cfg.cluster, cfg.cluster.task_index
    start_step = checkpoint_step(cfg.run.train_dir)  # before any task of this job can save
    update = cfg.replication.variable_update
    collective = update == 'collective_all_reduce'
    proto = _server_proto(cfg, collective)
    server = servers.start_server(cluster, proto)
    topology = topology_lib.Topology.between_graph(cluster.jobs(), index, cfg.device.device,
                                                   cfg.device.num_devices)
    built, step_after, final_fetches, placement = _worker_graph(cfg, topology)
    peers = [('ps', i) for i in range(len(cluster.ps_hosts))]
    if collective:
        peers += [('worker', w) for w in range(cluster.num_workers) if w != index]

    hooks = list(built.ops.hooks)
    if index in cluster.straggler_workers and cluster.straggler_delay_ms:
        hooks.append(_DelayHook(cluster.straggler_delay_ms / 1000.0))
    if topology.is_chief:
        hooks += _chief_hooks(cfg, built)
    filters = ['/job:worker'] if collective else ['/job:ps', '/job:worker/task:%d' % index]
    log('worker %d: %s, %d tower(s), batch %d per tower, %d trainable parameters'
        % (index, update, topology.num_towers, built.batch_size, built.num_params))
    session_start = time.time()
    with built.graph.as_default():
        session = sessions.monitored_session(
            server.target, sessions.session_config(proto, filters), built.saver,
            initialise=topology.is_chief or collective,
            checkpoint_dir=cfg.run.train_dir if topology.is_chief else None, hooks=hooks,
            timeout_s=cluster.peer_timeout_s,
            waits_for='chief worker 0 at %s' % cluster.worker_hosts[0],
            wait_for_peers=lambda: servers.wait_for_tasks(cluster, peers,
                                                          cluster.peer_timeout_s))
        with session as sess:
            ready_time = time.time()
            by_global_step = cluster.cross_replica_sync and update in _SYNC_BY_GLOBAL_STEP
            loop = _train_loop(sess, built, step_after, cfg, start_step, by_global_step, log)
            final = sess.run(final_fetches)
    # After the session closed: the chief's last checkpoint needs the ps tasks.
    servers.signal_done(server.target, cluster, _serving_tasks(cluster), index)
    extra = {name: int(value) for name, value in final['counters'].items()}
    extra.update(final_loss=float(final['loss']), variables_checksum=float(final['checksum']),
                 variable_bytes_by_device=placement, session_start_time=session_start,
                 session_ready_time=ready_time)
    return _result(cfg, built, loop, extra, start_step, log)


def _step_runner(sess, fetches, cfg):
    """run() -> the global step after one step; a step past --step_timeout_s is an error."""
    cluster = cfg.cluster
    options = tf.RunOptions(timeout_in_ms=int(cluster.step_timeout_s * 1000))

    def run():
        try:
            return sess.run(fetches, options=options)[1]
        except tf.errors.DeadlineExceededError:
            raise servers.ClusterError(
                'worker %d: a step did not finish within --step_timeout_s=%g (a synchronous '
                'step waits for the other workers: is one of them gone?)'
                % (cluster.task_index, cluster.step_timeout_s)) from None
    return run


def _train_loop(sess, built, step_after, cfg, start_step, by_global_step, log):
    """Warm-up and timed steps; returns their durations, end times and global steps."""
    run_cfg = cfg.run
    # Fill this worker's staging areas (its own input pipeline) before the first step.
    session_lib.warm_up(sess, built.ops.warmup_ops)
    run_step = _step_runner(sess, [built.ops.train_op, step_after], cfg)
    end = start_step + run_cfg.num_warmup_batches + run_cfg.num_batches
    step = start_step
    first_step_time = None
    for _ in range(run_cfg.num_warmup_batches):
        if by_global_step and step >= end - run_cfg.num_batches:
            break
        step = run_step()
        first_step_time = first_step_time or time.time()
    durations, end_times, steps = [], [], []
    warm_step = int(step)
    timed_start = time.time()
    last = time.perf_counter()
    while (step < end) if by_global_step else (len(durations) < run_cfg.num_batches):
        step = run_step()
        now = time.perf_counter()
        durations.append(now - last)
        end_times.append(time.time())
        steps.append(int(step))
        last = now
        first_step_time = first_step_time or end_times[-1]
        if len(durations) % run_cfg.display_every == 0:
            recent = durations[-run_cfg.display_every:]
            log('step %d\timages/sec: %.1f\tstep_time_ms: %.2f\tglobal_step: %d' % (
                len(durations), built.images_per_step * len(recent) / sum(recent),
                1000.0 * sum(recent) / len(recent), step))
    return {'durations': durations, 'end_times': end_times, 'global_steps': steps,
            'timed_start_time': timed_start, 'first_step_time': first_step_time,
            'warm_global_step': warm_step}


def _result(cfg, built, loop, extra, start_step, log):
    cluster = cfg.cluster
    durations = loop['durations']
    result = {'job_name': 'worker', 'task_index': cluster.task_index,
              'variable_update': cfg.replication.variable_update,
              'cross_replica_sync': cluster.cross_replica_sync, 'model': built.model_name,
              'batch_size': built.batch_size, 'images_per_step': built.images_per_step,
              'num_devices': built.topology.num_towers, 'num_workers': cluster.num_workers,
              'num_params': built.num_params, 'start_global_step': start_step,
              'config': cfg.to_dict()}
    result.update({k: loop[k] for k in ('end_times', 'global_steps', 'timed_start_time',
                                        'first_step_time')})
    result.update(extra)
    result['dropped_images'] = result.get('dropped_gradients', 0) * built.images_per_step
    if durations:
        times = timing.StepTimes(durations, sum(durations), built.images_per_step)
        result.update(times.summary())
        span = loop['end_times'][-1] - loop['timed_start_time']
        result['global_steps_per_sec'] = (
            (loop['global_steps'][-1] - loop['warm_global_step']) / span if span > 0 else 0.0)
        result['global_step'] = loop['global_steps'][-1]
        log('worker %d: %d steps, images/sec: %.2f, global steps/sec: %.2f, dropped '
            'gradients: %d' % (cluster.task_index, times.num_steps, times.images_per_sec,
                               result['global_steps_per_sec'],
                               result.get('dropped_gradients', 0)))
    else:
        result.update(num_steps=0, images_per_sec=0.0, global_steps_per_sec=0.0)
        log('worker %d: the job ended before this worker took a timed step'
            % cluster.task_index)
    if cfg.run.result_file:
        timing.append_json(cfg.run.result_file, result)
    return result

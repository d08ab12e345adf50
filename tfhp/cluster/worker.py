"""A between-graph worker: its own graph, session and steps, bounded and named on failure.

It builds its graph (`build.build` on a `Topology.between_graph`) with the job's control ops
(`tfhp.cluster.control`) and its progress counter in the step, waits for its essential peers,
starts a `task_session.TaskSession` (the chief initialises or restores from --train_dir, and writes
checkpoints and summaries), checks that the ps tasks can reach it (a restarted worker), primes
the manager's staged reads, warms up its staging areas and steps: every step's phase bounded by
the watchdog, a failed one ending the task with the peers to blame named. A worker that does not
train (--forward_only) times inference instead (`tfhp.cluster.inference`).

When a run ends: synchronous workers end at one global step, the job's end step: the global
step the chief started from (0, or a checkpoint's) + warm-up + num_batches. Asynchronous
workers each run warm-up + num_batches steps of their own. A stop signal (SIGTERM, SIGINT) to
any task stops the whole job at a common step; the chief writes its checkpoint of that step as
it closes.

The result adds to the benchmark's figures: wall-clock times (epoch seconds) of its session
start and first step and the end of every timed step (the launcher's cluster figures are
computed from them), the global step rate it saw, and its counts (dropped late gradients,
staleness) split into its timed steps' and its warm-up's.
"""
import collections
import signal
import time

import tensorflow.compat.v1 as tf

from tfhp.runner import build
from tfhp.runner import resolve
from tfhp import config as config_lib
from tfhp import counts
from tfhp.runner import loops
from tfhp import replication
from tfhp.runner import results
from tfhp import session as session_lib
from tfhp import startup
from tfhp import topology as topology_lib
from tfhp.cluster import agreement
from tfhp.cluster import bounded_steps
from tfhp.cluster import control
from tfhp.cluster import events as events_lib
from tfhp.cluster import inference
from tfhp.cluster import liveness
from tfhp.cluster import progress as progress_lib
from tfhp.cluster import servers
from tfhp.cluster import signals
from tfhp.cluster import task as task_lib
from tfhp.cluster import task_session
from tfhp.cluster import tracing
from tfhp.cluster import watchdog
from tfhp.data import errors as data_errors
from tfhp.ops import session_hooks
from tfhp.profiling import graphs as graphs_lib
from tfhp.replication import collective_workers

# The collective group of the all-reduce jobs' stop values (the manager's is GROUP_KEY).
_CONTROL_GROUP_KEY = collective_workers.GROUP_KEY + 1
# Bound on a failing worker's telling the serving tasks (it ends the task right after).
_LAST_WORDS_S = 5.0


class _DelayHook(tf.train.SessionRunHook):
    """Sleeps before every step: --straggler_mode=before_step (the compute mode's delay is an
    op inside the step, `tower.delayed`)."""

    def __init__(self, delay_s):
        self._delay_s = delay_s

    def before_run(self, run_context):
        time.sleep(self._delay_s)


def _chief_hooks(cfg, built, events):
    """Checkpoints (every --save_model_steps/--save_model_secs, and at the end), each noted as
    an event, and summaries."""
    train_dir, hooks = cfg.run.train_dir, []
    if not train_dir:
        return hooks
    steps = cfg.run.save_model_steps
    listeners = [events_lib.CheckpointEvents(events)]
    if cfg.cluster.save_model_secs or not steps:
        # Without an interval: only at the start and the end (CheckpointSaverHook always
        # writes then), as the one-process runner writes one checkpoint per run.
        hooks.append(tf.train.CheckpointSaverHook(
            train_dir, save_secs=cfg.cluster.save_model_secs or 10 ** 9, saver=built.saver,
            listeners=listeners))
    if steps:
        hooks.append(tf.train.CheckpointSaverHook(train_dir, save_steps=steps,
                                                  saver=built.saver, listeners=listeners))
    if built.summary_op is not None:
        hooks.append(tf.train.SummarySaverHook(save_steps=cfg.profile.save_summaries_steps,
                                               output_dir=train_dir,
                                               summary_op=built.summary_op))
    return hooks


_WorkerGraph = collections.namedtuple('_WorkerGraph', [
    'built',      # build.Built (not finalized: the session's hooks add ops)
    'train_op',   # the step, which also advances this worker's progress counter
    'control',    # int64 [global step, end, stop] read after the step
    'read_control',  # the same, read without a step
    'end_after',  # {steps: op moving the job's end to the global step + steps}
    'end_at_target',  # op moving it to --target_global_step (None without one)
    'final',      # read once at the end: counters, loss, a checksum of the variables
    'placement',  # task.bytes_by_device of the trainable variables
    'handshake',  # moves a tensor from this worker to every ps task (`bounded_steps.handshake`)
])


def _worker_graph(cfg, topology, coordinator_device, end_margins, combine_stop):
    """The worker's graph and its extra ops (see `_WorkerGraph`).

    The checksum of the variables is equal on every worker after a synchronous job, which is
    how a run shows that per-worker copies stayed equal.
    """
    built = build.build(cfg, topology, finalize=False)
    with built.graph.as_default():
        train_op = tf.group(built.ops.train_op, liveness.advance_op(topology.input_device))
        ctl = control.WorkerControl(built.ops.global_step, coordinator_device, combine_stop)
        final = {'counters': built.manager.counters(), 'loss': built.ops.loss,
                 'checksum': tf.add_n([tf.reduce_sum(tf.cast(v, tf.float64))
                                       for v in built.manager.trainable_variables(0)])}
        # Not a constant: grappler would fold a constant onto the ps, moving nothing.
        progress = liveness.read_progress(topology.input_device)
        copies = []
        for device in topology.variable_devices:
            with tf.device(device):
                copies.append(tf.identity(progress))
        return _WorkerGraph(built=built, train_op=train_op,
                            control=ctl.read_after(train_op, built.ops.step_made),
                            read_control=ctl.read(),
                            end_after={m: ctl.end_after(m) for m in end_margins},
                            end_at_target=(ctl.end_at(cfg.run.target_global_step)
                                           if cfg.run.target_global_step else None),
                            final=final,
                            placement=task_lib.bytes_by_device(tf.trainable_variables()),
                            handshake=tf.group(*copies))


def run(cfg, log, stop, fail):
    """Runs this between-graph worker (see the module doc); returns its result dict."""
    cluster, index = cfg.cluster, cfg.cluster.task_index
    topology = topology_lib.for_config(cfg)
    protocol = replication.worker_protocol(cfg.replication, topology)
    ps = [('ps', i) for i in range(len(cluster.ps_hosts))]
    others = [('worker', w) for w in range(cluster.num_workers) if w != index]
    # Without these peers this worker cannot go on; it also waits for them at the start.
    # Inference needs the ps tasks alone (the chief only initialises).
    essential = ps + (others if protocol.all_reduce else [('worker', 0)] if (
        index != 0 and protocol.common_end and cfg.trains) else [])
    # The chief checks every worker's settings; the others check the chief's (agreement is
    # transitive) and watch what they depend on: reads grow with the workers, not their square.
    watched = ps + (others if protocol.all_reduce or index == 0 else [('worker', 0)])
    proto = task_lib.server_proto(cfg, protocol.group_leader)
    events = events_lib.EventLog('worker %d' % index, log)
    task = task_lib.start(cfg, proto, agreement.settings(cfg), essential, fail, watched,
                          on_event=events.note)
    dog = task.dog
    if cfg.run.train_dir:
        dog.advise(lambda: _resume_advice(cfg.run.train_dir))
    # A failing worker tells the serving tasks, so they do not wait for it to the bound.
    serving = task_lib.serving_tasks(cluster)
    dog.last_words(lambda lost: servers.signal_done(
        task.server.target, cluster,
        [t for t in serving if t not in {(p.job, p.index) for p in lost}], index, failed=True),
                   min(cluster.peer_timeout_s, _LAST_WORDS_S))
    try:
        servers.wait_for_peers(task.watch, servers.peers(cluster, essential),
                               cluster.peer_timeout_s)
        startup.mark('peers')
        if not cfg.trains:  # --forward_only
            return inference.run(cfg, log, stop, task, proto, topology, events)
        return _train_worker(cfg, log, stop, task, proto, protocol, topology, events)
    except config_lib.ConfigError as e:
        # A setting at fault (a peer that never answered, the chief that never initialised,
        # a corrupt record): ended through the watchdog, so the serving tasks hear of it.
        dog.fail(str(e), watchdog.EXIT_MISMATCH)
        raise
    except Exception:
        dog.await_failure()
        raise


def _train_worker(cfg, log, stop, task, proto, protocol, topology, events):
    """The worker's graph, session and steps, once its essential peers answer."""
    cluster, index, dog = cfg.cluster, cfg.cluster.task_index, task.dog
    collective, by_global_step = protocol.all_reduce, protocol.common_end
    coordinator_device = liveness.cpu_device(*task_lib.control_task(cluster))
    warm_and_timed = cfg.run.num_warmup_batches + cfg.run.num_batches
    combine_stop = (control.all_reduce_max(cluster.num_workers, _CONTROL_GROUP_KEY, 1,
                                           cluster.step_timeout_s) if collective else None)
    graph = _worker_graph(cfg, topology, coordinator_device,
                          (control.STOP_MARGIN, warm_and_timed), combine_stop)
    startup.mark('graph')
    built = graph.built
    graph_file = tracing.task_path(cfg.profile.graph_file, index)
    if graph_file:
        log('Wrote the graph to %s' % graphs_lib.write_graph(built.graph, graph_file))
    set_end = graph.end_at_target or graph.end_after[warm_and_timed]
    hooks = []
    if topology.is_chief and not collective and by_global_step:
        # Before the sync hook.
        hooks.append(session_hooks.RunAtStart(set_end))
    hooks += built.ops.hooks
    if collective:
        # After the broadcast hook: every worker starts from the chief's global step.
        hooks.append(session_hooks.RunAtStart(set_end))
    if cluster.straggler_delay_s(index, 'before_step'):
        hooks.append(_DelayHook(cluster.straggler_delay_s(index, 'before_step')))
    if topology.is_chief:
        hooks += _chief_hooks(cfg, built, events)
    filters = ['/job:worker'] if collective else ['/job:ps', '/job:worker/task:%d' % index]
    log('worker %d: %s, %d tower(s), batch %d per tower, %d trainable parameters'
        % (index, cfg.replication.variable_update, topology.num_towers, built.batch_size,
           built.num_params))
    sess, session_start, ready_time = task_lib.open_session(
        task, built, cluster, cfg.run.train_dir, task_session.session_config(proto, filters),
        hooks, topology.is_chief, topology.is_chief or collective, events)
    task.watch.set_interval(liveness.steady_interval(cluster.peer_timeout_s))

    def on_stop(signum):
        name = signal.Signals(signum).name
        log('worker %d: %s: stopping the job at a common step' % (index, name))
        dog.stop_by('stopping after %s' % name, task_lib.stop_bound(cluster),
                    signals.exit_status(signum))
        control.StopRequester(task.server.target, coordinator_device,
                              cluster.peer_timeout_s).request(signum)
    stop.on_stop(on_stop)
    try:
        loop = _train_loop(sess, graph, cfg, by_global_step, stop, dog, log, events)
    except (tf.errors.InvalidArgumentError, tf.errors.DataLossError) as e:
        corrupt = data_errors.describe_corrupt_input(cfg.data, e, 'train',
                                                     resolve.data_set(cfg))
        if corrupt:
            raise config_lib.ConfigError(corrupt) from e
        raise
    timeout = tf.RunOptions(timeout_in_ms=int(cluster.peer_timeout_s * 1000))
    dog.phase('settling the last step (its background pulls)', cluster.step_timeout_s)
    session_hooks.settle(sess, hooks)
    dog.phase('reading the final figures', cluster.peer_timeout_s)
    final = sess.run(graph.final, options=timeout)
    dog.phase('closing the session (the chief writes its last checkpoint)',
              2 * cluster.peer_timeout_s)
    sess.close()
    # After the session closed: the chief's last checkpoint needs the ps tasks.
    dog.phase('signalling done to the serving tasks', cluster.peer_timeout_s)
    for job, task_index in servers.signal_done(task.server.target, cluster,
                                               task_lib.serving_tasks(cluster), index):
        log('worker %d: could not tell %s task %d it is done (it waits --peer_timeout_s for '
            'this worker, then ends)' % (index, job, task_index))
    dog.phase('writing the result', None)
    return _result(cfg, built, loop, final, log, variable_bytes_by_device=graph.placement,
                   session_start_time=session_start, session_ready_time=ready_time,
                   stopped_by=stop.signum, events=events.events)


def _resume_advice(train_dir):
    """What to do after a fatal loss: the job resumes from its latest checkpoint."""
    step = task_lib.checkpoint_step(train_dir)
    return ('start the job again with the same flags: it resumes from %s' % (
        'the checkpoint of global step %d in --train_dir=%s' % (step, train_dir) if step else
        'the start (no checkpoint in --train_dir=%s yet)' % train_dir))


def _noting(path):
    """take -> on_step(value): take(value), the global step and loss (of the value's control
    values and loss) appended to `path` first, one 'step loss' line per step (None: not
    written). The log outlives the attempts of a recovered job: it is their loss curve."""
    def wrap(take):
        def on_step(value):
            if path:
                with open(path, 'a') as f:
                    f.write('%d %r\n' % (value[1][0], float(value[2])))
            return take(value)
        return on_step
    return wrap


def _train_loop(sess, graph, cfg, by_global_step, stop, dog, log, events):
    """Warm-up and timed steps (`session.run_steps`, the one timed loop); returns their
    `progress.LoopOutcome`.

    Synchronous workers run until the job's end step (warming up until the timed part of the
    job starts); asynchronous ones run their own warm-up + num_batches steps. Both stop early
    when a task of the job asked to stop (the stop value).
    """
    run_cfg, cluster = cfg.run, cfg.cluster
    built = graph.built
    bounded_steps.handshake(sess, graph.handshake, cluster, dog)
    timeout = tf.RunOptions(timeout_in_ms=int(cluster.step_timeout_s * 1000))
    dog.phase('the staging warm-up', cluster.step_timeout_s + cluster.peer_timeout_s)
    # The manager's post-init ops (priming staged reads: this worker's own areas), once the
    # chief initialised or restored the variables; then this worker's input staging areas.
    if built.post_init_ops:
        sess.run(built.post_init_ops, options=timeout)
    for k in range(len(built.ops.warmup_ops)):
        sess.run(built.ops.warmup_ops[:k + 1], options=timeout)
    progress = progress_lib.JobProgress(
        sess.run(graph.read_control, options=timeout), by_global_step,
        run_cfg.num_warmup_batches, run_cfg.num_batches,
        lambda: sess.run(graph.end_after[control.STOP_MARGIN], options=timeout), stop,
        lambda signum, step: events.note('the job is asked to stop (signal %d) at global '
                                         'step %d' % (signum, step)))
    fetch = [graph.train_op, graph.control, built.ops.loss]
    noted = _noting(run_cfg.progress_file if cluster.task_index == 0 else None)
    if progress.warm_more():
        session_lib.run_steps(sess, fetch, run_cfg.num_warmup_batches, built.images_per_step,
                              run=bounded_steps.step_runner(sess, cluster, dog, 'warm-up step'),
                              on_step=noted(lambda value: progress.after_warm_step(value[1])))
    # The warm-up's work beside the steps (priority pushes: the pushes of its last step, the
    # first to run each push op) is done before the timed steps start.
    session_hooks.settle(sess, built.ops.hooks)
    # The manager's counts so far, so that the result splits them into warm-up and timed.
    warm_counters = counts.values(sess.run(graph.final['counters'], options=timeout))

    def on_interval(index, durations, values):
        log(loops.format_interval(index, durations, values, built.images_per_step,
                                  run_cfg.display_every))

    times = None
    if progress.start_timed():
        times = session_lib.run_steps(
            sess, fetch, progress.timed_limit, built.images_per_step,
            [session_lib.Observer(run_cfg.display_every, {'loss': built.ops.loss}, on_interval)],
            run=bounded_steps.step_runner(sess, cluster, dog, 'step'),
            on_step=noted(lambda value: progress.after_timed_step(value[1], loss=value[2])),
            **tracing.step_tracing(cfg, log, built.ops.hooks, sess))
        session_hooks.settle(sess, built.ops.hooks)
        progress.settled()
    if progress.stopped:
        events.note('the job stopped at global step %d' % progress.step)
    return progress_lib.LoopOutcome(
        times=times, end_times=progress.end_times, global_steps=progress.global_steps,
        timed_start_time=progress.timed_start_time, first_step_time=progress.first_step_time,
        warm_global_step=progress.warm_step, start_global_step=progress.start_step,
        warmup_steps=progress.warmup_steps, warmup_counters=warm_counters,
        first_loss=progress.first_loss, last_loss=progress.last_loss)


def _result(cfg, built, loop, final, log, **session):
    """The worker's result record's JSON form (`tfhp.runner.results`): its timed steps, its counts
    split into warm-up and timed, and the times the launcher's job figures need.

    Args:
      cfg, built: the worker's config and graph.
      loop: the `progress.LoopOutcome` of `_train_loop`.
      final: the values of the graph's final fetch (loss, checksum, counters).
      log: called with each line to print.
      **session: the `results.Worker` fields the session gave (start and ready times,
        variable placement, the stop signal).
    """
    cluster, times, per_step = cfg.cluster, loop.times, built.images_per_step
    split = progress_lib.timed_counts(counts.values(final['counters']), loop.warmup_counters)
    warmup_counters = results.take(results.Counters, split, 'warmup_') or results.Counters()
    counters = results.Counters(**split)
    if times:
        span = loop.end_times[-1] - loop.timed_start_time
        global_step = loop.global_steps[-1]
        rate = (global_step - loop.warm_global_step) / span if span > 0 else 0.0
    else:
        global_step, rate = loop.warm_global_step, 0.0
    worker = results.Worker(
        startup_times=dict(startup.MARKS), warmup_steps=loop.warmup_steps,
        images=times.num_steps * per_step if times else 0,
        dropped_images=(counters.dropped_gradients or 0) * per_step,
        warmup_dropped_images=(warmup_counters.dropped_gradients or 0) * per_step,
        global_steps_per_sec=rate, variables_checksum=float(final['checksum']),
        end_times=loop.end_times, global_steps=loop.global_steps,
        timed_start_time=loop.timed_start_time, first_step_time=loop.first_step_time,
        start_global_step=loop.start_global_step, **session)
    result = results.record(
        cfg, built, times,
        outcome=results.Outcome(final_loss=float(final['loss']), global_step=global_step,
                                first_loss=loop.first_loss, last_loss=loop.last_loss),
        counters=counters, warmup_counters=warmup_counters, worker=worker)
    marks = dict(startup.MARKS, session_ready_time=session['session_ready_time'])
    if loop.first_step_time:
        marks['first_step_time'] = loop.first_step_time
    log('worker %d: start-up from process start: %s' % (cluster.task_index, ', '.join(
        '%s %.1f s' % (phase.replace('_', ' '), seconds) for phase, seconds in
        startup.breakdown(marks, startup.MARKS.get('started', 0.0)).items())))
    if times:
        log('worker %d: %d timed steps, images/sec: %.2f, global steps/sec: %.2f, dropped '
            'gradients: %d timed, %d in %d warm-up steps'
            % (cluster.task_index, times.num_steps, times.images_per_sec, rate,
               counters.dropped_gradients or 0, warmup_counters.dropped_gradients or 0,
               loop.warmup_steps))
    else:
        log('worker %d: the job ended before this worker took a timed step'
            % cluster.task_index)
    return results.write(cfg, result)

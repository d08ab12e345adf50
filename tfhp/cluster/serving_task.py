"""A task that only serves: a ps task, or an in-graph worker other than the client.

It holds variables (or runs towers) for the tasks it serves and exits once every one of them
has signalled done, failed or was lost (`servers.serve_until_done`), so a job leaves no process
behind. With --linger_s it serves that much longer, or until a client releases it
(`servers.linger`): the variables it holds outlive their client, and a client that never saved
can reconnect and save them (`tfhp.reconnect`). With --serve_clients it serves clients in
containers (`tfhp.cluster.container_client`) instead of the job's workers: it waits for none of
them, and only lingers. A stop signal to it asks the whole job to stop (`tfhp.cluster.control`); it then serves
on until its workers stopped, within `task.stop_bound`.
"""
import signal

from tfhp.cluster import control
from tfhp.cluster import errors
from tfhp.cluster import events as events_lib
from tfhp.cluster import liveness
from tfhp.cluster import servers
from tfhp.cluster import signals
from tfhp.cluster import task as task_lib


def serve(cfg, log, stop, fail):
    """Serves the job until every task it serves is done, failed or lost (see the module doc).

    Returns:
      {'job_name', 'task_index', 'served': True}, and 'stopped_by' (the signal) when a stop
      signal ended the job. A lingering task ends the same way once its lingering ended.
    Raises:
      errors.PeerLost: a served task failed or was lost before it signalled done.
    """
    cluster = cfg.cluster
    events = events_lib.EventLog('%s %d' % (cluster.job_name, cluster.task_index), log)
    # A server of clients watches no worker: the slots of clients not started yet would only
    # read as lost (and their addresses' channels back off before the clients start).
    watched = [('ps', i) for i in range(len(cluster.ps_hosts))
               if i != cluster.task_index] if cluster.serve_clients else None
    task = task_lib.start(cfg, task_lib.server_proto(cfg), None, (), fail, watched=watched,
                          on_event=events.note)
    if cluster.serve_clients:
        senders = {}
    elif cluster.mode.one_graph:
        job, index = task_lib.client(cluster)
        senders = {task_lib.sender_id(cluster, job, index): servers.peers(cluster, [(job, index)])[0]}
    else:
        senders = dict(enumerate(servers.peers(
            cluster, [('worker', w) for w in range(cluster.num_workers)])))

    def on_stop(signum):
        name = signal.Signals(signum).name
        log('%s: %s: asking the job to stop' % (task.me, name))
        task.dog.stop_by('stopping after %s' % name, task_lib.stop_bound(cluster),
                         signals.exit_status(signum))
        requester = control.StopRequester(task.server.target,
                                          liveness.cpu_device(*task_lib.control_task(cluster)),
                                          cluster.peer_timeout_s)
        if not requester.request(signum):
            task.dog.fail('%s: the coordinator did not take the stop request' % name,
                          signals.exit_status(signum))
    stop.on_stop(on_stop)
    log('%s serving until %d task(s) are done%s' % (task.me, len(senders), (
        ', then %g s more or until released' % cluster.linger_s) if cluster.linger_s else ''))
    task.watch.set_interval(liveness.steady_interval(cluster.peer_timeout_s))
    lost = servers.serve_until_done(task.server, cluster, task.state, task.watch, senders, log)
    if cluster.linger_s:
        ended = servers.linger(task.server, cluster, task.state, log, lambda: stop.requested)
        log('%s: lingering ended (%s)' % (task.me, ended))
    if lost:
        raise errors.PeerLost('%s: %s failed or was lost before signalling done'
                               % (task.me, ', '.join(str(p) for p in lost)))
    log('%s: every task is done; exiting' % task.me)
    result = {'job_name': cluster.job_name, 'task_index': cluster.task_index, 'served': True}
    if stop.requested:
        result['stopped_by'] = stop.signum
    return result

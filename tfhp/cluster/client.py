"""The in-graph client: one graph with towers on every worker, driven through its server.

The client (the controller, or worker 0) waits for every serving task, builds the ordinary
one-process benchmark on a cluster-wide `Topology.in_graph` and runs it through its server
(`tfhp.runner.benchmark.run`), then signals done to the serving tasks. A stop signal ends the
job: the in-graph loop has no common stop step, so the client signals done and exits.
"""
import signal

from tfhp.runner import benchmark
from tfhp import topology as topology_lib
from tfhp.cluster import agreement
from tfhp.cluster import servers
from tfhp.cluster import signals
from tfhp.cluster import task as task_lib


def run(cfg, log, stop, fail):
    """Runs the in-graph client's benchmark through its server; returns its result dict."""
    cluster = cfg.cluster
    job, index = cluster.job_name, cluster.task_index
    serving = task_lib.serving_tasks(cluster)
    task = task_lib.start(cfg, task_lib.server_proto(cfg), agreement.settings(cfg), serving,
                          fail)
    servers.wait_for_peers(task.watch, servers.peers(cluster, serving), cluster.peer_timeout_s)
    done = lambda: servers.signal_done(task.server.target, cluster, serving,  # noqa: E731
                                       task_lib.sender_id(cluster, job, index))

    def on_stop(signum):
        # The in-graph loop has no common stop step: the client ends the job by signalling done.
        task.dog.stop_by('stopping', cluster.peer_timeout_s, signals.exit_status(signum))
        done()
        task.dog.fail('stopped by %s' % signal.Signals(signum).name,
                      signals.exit_status(signum))
    stop.on_stop(on_stop)
    topology = topology_lib.for_config(cfg)
    try:
        result = benchmark.run(cfg, log, topology=topology, target=task.server.target)
    except Exception:
        task.dog.await_failure()
        raise
    task.dog.phase('signalling done to the serving tasks', cluster.peer_timeout_s)
    done()
    return result

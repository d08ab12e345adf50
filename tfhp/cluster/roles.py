"""Runs this process's task of a cluster: dispatches to its role (`tfhp.cluster.task`)."""
from tfhp.cluster import client
from tfhp.cluster import container_client
from tfhp.cluster import servers
from tfhp.cluster import serving_task
from tfhp.cluster import signals
from tfhp.cluster import task as task_lib
from tfhp.cluster import watchdog
from tfhp.cluster import worker


def run(cfg, log=print, stop=None, fail=watchdog.exit_process):
    """Runs this process's task of the cluster `cfg.cluster` describes, first saying who can
    reach its server unless only its own network namespace can (`servers.exposure`).

    Args:
      cfg: a `tfhp.config.BenchmarkConfig` with a cluster.
      log: called with each line to print.
      stop: the process's `signals.StopSignals` (installed by the command line before
        TensorFlow started any thread); None: no stop signal is taken.
      fail: fail(message, status) ends the task when a peer is lost, a wait overruns or a
        peer disagrees; the default prints the line and exits the process at once.
    Returns:
      The result dict of a worker or client (a worker with --container: a client of its own,
      `container_client`) (also appended to cfg.run.result_file); a serving
      task returns {'job_name', 'task_index', 'served': True}. Either has 'stopped_by' (the
      signal number) when a stop signal ended the job.
    Raises:
      errors.ClusterError: a peer did not answer at the start.
      errors.PeerLost: a served task was lost before it signalled done.
    """
    cluster = cfg.cluster
    stop = stop or signals.StopSignals()
    task = (cluster.job_name, cluster.task_index)
    serving = task in task_lib.serving_tasks(cluster)
    note = servers.exposure(cluster, servers.interfaces(), serving)
    if note:  # before the server starts: a task that fails later has said it
        log(note)
    if serving:
        return serving_task.serve(cfg, log, stop, fail)
    if cluster.container:
        return container_client.run(cfg, log, stop, fail)
    if cluster.mode.one_graph:
        return client.run(cfg, log, stop, fail)
    return worker.run(cfg, log, stop, fail)

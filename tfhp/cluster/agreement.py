"""What every task of a job must agree on, and the check that refuses a job that does not.

Tasks started by hand from different command lines (one worker told of 2 workers, another of
3; different models or batch sizes) would otherwise build graphs that do not fit together and
fail deep in a step, or hang. Each task publishes the cluster it was told and, for tasks that
build the model, the settings below (`tfhp.cluster.liveness.describe`); every task compares
what its peers published with its own as soon as they answer. Pure Python.
"""

# Settings that shape the variables of a worker's graph or the job's protocol, as flag names.
# Not here: what may differ per machine (data paths, device kinds and counts, layouts).
SETTINGS = {
    'model': ('model', 'name'), 'batch_size': ('model', 'batch_size'),
    'image_size': ('model', 'image_size'), 'num_classes': ('model', 'num_classes'),
    'optimizer': ('optimizer', 'optimizer'),
    'variable_update': ('replication', 'variable_update'),
    'graph_mode': ('cluster', 'graph_mode'),
    'cross_replica_sync': ('cluster', 'cross_replica_sync'),
    'replicas_to_aggregate': ('cluster', 'replicas_to_aggregate'),
    'partition_min_bytes': ('cluster', 'partition_min_bytes'),
    # Workers that cut their gradients into other buckets issue collectives that never match.
    'fusion_bucket_bytes': ('replication', 'fusion_bucket_bytes'),
}
_CLUSTER_FLAGS = {'ps': '--ps_hosts', 'worker': '--worker_hosts', 'controller': '--controller_host'}


def settings(cfg):
    """{flag name: value} of cfg for the settings every model-building task must share."""
    return {flag: getattr(getattr(cfg, section), field)
            for flag, (section, field) in SETTINGS.items()}


def _hosts(cluster, job):
    hosts = cluster.get(job, [])
    return '%d (%s)' % (len(hosts), ','.join(hosts)) if hosts else 'none'


def mismatch(mine, theirs, peer):
    """Why a peer's description disagrees with this task's, or None if it agrees.

    Args:
      mine, theirs: descriptions (`liveness.describe`, parsed).
      peer: the `liveness.Peer` that published `theirs`, as this task's cluster names it.
    Returns:
      One line naming the peer and every differing flag with both values ('there' is the
      peer's, 'here' this task's), or None.
    """
    if (theirs['job'], theirs['index']) != (peer.job, peer.index):
        return ('%s answers as %s task %d, but this task was told it is %s task %d: the tasks '
                'were started with different cluster flags (or TF_CONFIG)'
                % (peer.address, theirs['job'], theirs['index'], peer.job, peer.index))
    differences = []
    for job, flag in sorted(_CLUSTER_FLAGS.items()):
        if mine['cluster'].get(job, []) != theirs['cluster'].get(job, []):
            differences.append('%s: %s there, %s here' % (flag, _hosts(theirs['cluster'], job),
                                                          _hosts(mine['cluster'], job)))
    if mine['settings'] is not None and theirs['settings'] is not None:
        for flag in sorted(SETTINGS):
            a, b = theirs['settings'].get(flag), mine['settings'].get(flag)
            if a != b:
                differences.append('--%s: %s there, %s here' % (flag, a, b))
    if not differences:
        return None
    return '%s disagrees with this task: %s' % (peer, '; '.join(differences))

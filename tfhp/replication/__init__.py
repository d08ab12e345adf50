"""Variable managers. `make_variable_manager` builds the one a strategy names, from the builders
registered here (`ONE_GRAPH`, `GRAPH_PER_WORKER`); what each strategy supports is its row of
`tfhp.modes.STRATEGIES`, and no code here compares strategy names.

  base.py                    the VariableManager interface, Update, Reduction
  parameter_server.py, replicated.py, independent.py   one graph's strategies
  per_tower_copies.py, init_flag.py   a copy per tower; the copies set once from tower 0
  staged_vars.py             reads through staging areas (--staged_vars)
  device_setters.py          placement on the ps devices
  staleness.py               measured staleness and its remedies
  between graphs: async_replicas.py, sync_replicas.py (the token protocol, spares),
  distributed_replicated.py, master_copies.py, collective_workers.py, partitioning.py
  transfers.py               the ps transfers: a class per row of `tfhp.modes.TRANSFERS`
  transfer.py                what a worker sends, compressed
  downlink.py                what the ps sends back, as compressed deltas
  background_pulls.py        ready queues: each copy's reads wait for its own pull
  priority_pushes.py         gradients sent in forward order, from sender threads
"""
import collections
import functools

from tfhp import modes
from tfhp.ops import allreduce
from tfhp.ops import allreduce_builder
from tfhp.ops import packing
from tfhp.replication import async_replicas
from tfhp.replication import collective_workers
from tfhp.replication import distributed_replicated
from tfhp.replication import downlink as downlink_lib
from tfhp.replication import independent
from tfhp.replication import parameter_server
from tfhp.replication import partitioning
from tfhp.replication import replicated
from tfhp.replication import staleness
from tfhp.replication import sync_replicas
from tfhp.replication import transfers


WorkerProtocol = collections.namedtuple('WorkerProtocol', [
    'all_reduce',   # workers exchange gradients among themselves, no ps: each holds the
                    # variables, talks to every other worker and forms a collective group
    'group_leader',  # the collective group's leader task ('' without all_reduce)
    'common_end',   # synchronous steps: every worker ends at one global step
])


def worker_protocol(replication_config, topology):
    """How the workers of a between-graph job meet, for the code that runs them (which names no
    strategy): a `WorkerProtocol`."""
    all_reduce = replication_config.strategy.worker_all_reduce
    return WorkerProtocol(all_reduce=all_reduce,
                          group_leader=collective_workers.GROUP_LEADER if all_reduce else '',
                          common_end=topology.synchronous)


def make_variable_manager(replication_config, topology, cluster_config=None,
                          staleness_config=None, trains=True):
    """Builds the VariableManager a ReplicationConfig names, for a Topology.

    A between-graph worker that does not train (inference, --forward_only) reads the variables
    where the ps tasks hold them, whatever the strategy trains them with (the masters of
    `distributed_replicated` carry the same names and placement): a `ParameterServer`.

    Asynchronous parameter-server training (topology.synchronous false) measures
    gradient staleness and applies staleness_config's remedies (`staleness.Staleness`): between
    graphs its `AsyncReplicas` does so itself, in-graph the manager is wrapped; so is any
    in-graph run with measure_staleness.

    Args:
      replication_config: a `tfhp.config.ReplicationConfig`.
      topology: a `tfhp.topology.Topology`.
      cluster_config: a `tfhp.config.ClusterConfig`; needed when the topology is one worker's
        of a between-graph job (spare replicas, partitioning, the step timeout).
      staleness_config: a `tfhp.config.StalenessConfig`, or None (measure only).
      trains: False for a graph that only reads the variables (evaluation, inference).
    Returns:
      A `tfhp.replication.base.VariableManager`.
    """
    if not trains and topology.mode.graph_per_worker:
        return parameter_server.ParameterServer(topology.tower_devices,
                                                topology.variable_devices,
                                                caching_device=topology.input_device)
    remedies = _remedies(topology, cluster_config, staleness_config)
    manager = _make_manager(replication_config, topology, cluster_config, remedies)
    asynchronous = not topology.synchronous and replication_config.strategy.staleness
    measure = (staleness_config is not None and staleness_config.measure_staleness and
               topology.mode.one_graph)
    if isinstance(manager, staleness.Staleness) or not (asynchronous or measure):
        return manager
    return staleness.Staleness(manager, topology.input_device, **remedies)


def _remedies(topology, cluster_config, staleness_config):
    """`staleness.Staleness`'s keyword arguments but the counter device, from the configs."""
    remedies = dict(join_timeout_s=cluster_config.step_timeout_s if cluster_config else 600.0)
    if staleness_config is not None:
        remedies.update(max_staleness=staleness_config.max_gradient_staleness,
                        scale_by_staleness=staleness_config.scale_stale_gradients)
        # In-graph, the runner starts the other replicas late; between graphs, they wait.
        if topology.mode.graph_per_worker and not topology.is_chief:
            remedies['join_after_step'] = staleness_config.async_warmup_steps
    return remedies


def _make_manager(replication_config, topology, cluster_config, remedies):
    """The manager of replication_config's strategy (see make_variable_manager)."""
    name = replication_config.variable_update
    if not topology.mode.graph_per_worker:
        return _build(ONE_GRAPH, name, 'in one graph', replication_config, topology)
    # Only a strategy whose row has staged_reads gets the keyword (the config refuses it for
    # the others), so a registered builder without staged reads need not take it.
    staged = dict(staged_vars=True) if replication_config.staged_reads else {}
    # Likewise packer= (--fusion_bucket_bytes), for a row with worker_all_reduce only.
    packer = _packer(replication_config)
    fused = dict(packer=packer) if packer else {}
    # And max_subdivs= (--collective_subdivs), also for a row with worker_all_reduce only.
    subdivs = replication_config.ring_subdivs
    ring = dict(max_subdivs=subdivs) if subdivs else {}
    # And downlink= (--downlink_compression), for a row with downlink_deltas only.
    deltas = replication_config.downlink_compressor()
    downlink = dict(downlink=downlink_lib.Downlink(deltas)) if deltas else {}
    # And transfer= (--ps_transfer and its sizes, or the row's own), for a synchronous job of
    # a row with a ps_transfer only.
    row = modes.transfer_of(replication_config.strategy, cluster_config.ps_transfer)
    transfer = dict(transfer=transfers.make(
        row.name, cluster_config.ps_chunk_bytes, cluster_config.ps_window_bytes,
        cluster_config.ps_group_bytes)) if row and topology.synchronous else {}
    return _build(GRAPH_PER_WORKER, name, 'between graphs', topology, cluster_config,
                  replication_config.compressor(), remedies,
                  **staged, **fused, **ring, **downlink, **transfer)


def _build(builders, name, where, *args, **kwargs):
    if name not in builders:
        raise ValueError('variable_update %r does not run %s' % (name, where))
    return builders[name](*args, **kwargs)


def _parameter_server(cfg, topology):
    return parameter_server.ParameterServer(topology.tower_devices, topology.variable_devices,
                                            staged_vars=cfg.staged_reads,
                                            compressor=cfg.compressor())


def _replicated(cfg, topology):
    return replicated.Replicated(topology.tower_devices, make_all_reduce(cfg, topology),
                                 packer=_packer(cfg))


def _independent(cfg, topology):
    del cfg  # Each tower keeps its own variables: nothing to configure.
    return independent.Independent(topology.tower_devices)


def _sync(topology, cluster, compressor, transfer):
    """SyncReplicas(placement) for synchronous steps between workers through `transfer`, or
    None (asynchronous)."""
    if not topology.synchronous:
        return None
    return functools.partial(
        sync_replicas.SyncReplicas, worker_device=topology.input_device,
        replicas_to_aggregate=cluster.replicas_to_aggregate or topology.num_workers,
        num_replicas=topology.num_workers, is_chief=topology.is_chief,
        compressor=compressor, timeout_s=cluster.step_timeout_s, transfer=transfer)


def _between_graph_ps(topology, cluster, compressor, remedies, staged_vars=False,
                      transfer=None):
    worker = topology.input_device
    placement = parameter_server.ParameterServer(topology.tower_devices,
                                                 topology.variable_devices,
                                                 staged_vars=staged_vars,
                                                 caching_device=worker)
    if cluster.partition_min_bytes and len(topology.variable_devices) > 1:
        placement = partitioning.Partitioned(placement, len(topology.variable_devices),
                                             cluster.partition_min_bytes)
    sync = _sync(topology, cluster, compressor, transfer)
    if sync:
        return sync(placement)
    return async_replicas.AsyncReplicas(placement, worker, compressor, **remedies)


def _distributed_replicated(topology, cluster, compressor, remedies, downlink=None,
                            transfer=None):
    del remedies  # Asynchronous copies measure no staleness (modes: staleness is False).
    sync = _sync(topology, cluster, compressor, transfer)
    return distributed_replicated.DistributedReplicated(
        topology.tower_devices, topology.variable_devices, topology.input_device,
        sync=sync(None) if sync else None, compressor=compressor, downlink=downlink)


def _collective_all_reduce(topology, cluster, compressor, remedies, packer=None,
                           max_subdivs=0):
    del remedies  # Synchronous only.
    return collective_workers.CollectiveWorkers(
        topology.tower_devices, topology.num_workers, topology.is_chief,
        timeout_s=cluster.step_timeout_s, compressor=compressor, packer=packer,
        max_subdivs=max_subdivs)


# Builders of each strategy's manager, by the graph layout they run in; the keys are the
# strategies of `tfhp.modes.STRATEGIES` whose one_graph / graph_per_worker is true (a test
# checks both agree). One graph: builder(replication_config, topology). A graph per worker:
# builder(topology, cluster_config, compressor or None, staleness remedies[, staged_vars=True]
# [, packer=plan_fn][, downlink=Downlink][, transfer=a tfhp.replication.transfers object]).
ONE_GRAPH = {
    'parameter_server': _parameter_server,
    'replicated': _replicated,
    # In one graph across a cluster it is replicated: the topology holds every worker's towers.
    'distributed_all_reduce': _replicated,
    'independent': _independent,
}
GRAPH_PER_WORKER = {
    'parameter_server': _between_graph_ps,
    'distributed_replicated': _distributed_replicated,
    'collective_all_reduce': _collective_all_reduce,
}


def register_strategy(row, one_graph=None, graph_per_worker=None):
    """Adds a strategy at run time: its `tfhp.modes.Strategy` row and its builders.

    A strategy in the tree is a row of `tfhp.modes.STRATEGIES` and entries in ONE_GRAPH /
    GRAPH_PER_WORKER; a script's own strategy registers both here (docs/extending.md).

    Args:
      row: a `tfhp.modes.Strategy`; its one_graph / graph_per_worker say which builders it needs.
      one_graph: builder(replication_config, topology) -> VariableManager.
      graph_per_worker: builder(topology, cluster_config, compressor, remedies); a row with
        staged_reads also gets staged_vars=True under --staged_vars, one with
        worker_all_reduce packer=plan_fn under --fusion_bucket_bytes (`packing.buckets`) and
        max_subdivs=N under --collective_subdivs, and
        one with downlink_deltas downlink=`downlink.Downlink` under --downlink_compression,
        and one with a ps_transfer transfer= (`transfers.make`) when synchronous.
    Raises:
      ValueError: a builder the row calls for is missing (or one it does not), or the name is
        taken.
    """
    for needed, builder, what in ((row.one_graph, one_graph, 'one_graph'),
                                  (row.graph_per_worker, graph_per_worker, 'graph_per_worker')):
        if needed != (builder is not None):
            raise ValueError('strategy %r: %s is %s, so its builder must be %s'
                             % (row.name, what, needed, 'given' if needed else 'None'))
    modes.register(row)
    if one_graph:
        ONE_GRAPH[row.name] = one_graph
    if graph_per_worker:
        GRAPH_PER_WORKER[row.name] = graph_per_worker


def make_all_reduce(replication_config, topology):
    """The `AllReduce` over topology.tower_devices that a ReplicationConfig names.

    `--all_reduce_spec` if given; else `--hierarchical_copy` (two halves of the towers, then
    across them); else a copy to the local parameter device(s) (the host CPU, or each tower
    device in turn with --local_parameter_device=gpu). Wrapped in `allreduce.Compressed` when
    --gradient_compression (or --gradient_transfer_dtype) names a scheme: a scheme that cannot
    be summed is all-gathered along the algorithm's topology (`allreduce.AllReduce.all_gather`).
    """
    cfg, devices = replication_config, topology.tower_devices
    if cfg.all_reduce_spec:
        algorithm = allreduce_builder.from_spec(cfg.all_reduce_spec, devices,
                                                topology.input_device)
    elif cfg.hierarchical_copy:
        algorithm = allreduce.Hierarchical(allreduce.CopyToDevice(), allreduce.CopyToDevice(),
                                           group_size=(len(devices) + 1) // 2)
    else:
        algorithm = allreduce.CopyToDevice(topology.variable_devices)
    compressor = cfg.compressor()
    if compressor is not None:
        algorithm = allreduce.Compressed(algorithm, compressor)
    return algorithm


def _packer(cfg):
    """The gradient packing policy the packing flags name: plan_fn(tensors) -> `packing.Plan`,
    or None (each gradient all-reduced alone)."""
    if cfg.fusion_bucket_bytes:
        return functools.partial(packing.buckets, bucket_bytes=cfg.fusion_bucket_bytes)
    if cfg.gradient_repacking:
        return functools.partial(packing.concat_into, num_packs=cfg.gradient_repacking)
    if cfg.agg_small_grads_max_bytes:
        return functools.partial(packing.group_small, max_bytes=cfg.agg_small_grads_max_bytes,
                                 max_group=cfg.agg_small_grads_max_group)
    return None

"""The ways of running a job that the studies compare, one catalogue built on `tfhp.modes`.

  Preset        a --variable_update, its graph mode, sync or async, its all-reduce and other
                replication settings: its tfhp flags (or config fields), its ps tasks
  REPLICATION   replication_bench's variants: in-graph strategies and all-reduce choices in
                one process (name -> Preset)
  DISTRIBUTED   distributed_bench's modes: every between-graph strategy, sync and async where
                it can be, and in-graph across the cluster (label -> Preset)
  ABLATIONS     ablations' variable_update: in-graph strategies and all-reduce algorithms in
                one process, then every between-graph mode (label -> Preset)
  LINKS         links_study's --modes (name -> Preset)
  COMBOS        four_combos' combinations: in-graph (one process, a replica per device) or
                between-graph, sync or async (name -> Preset)

What a preset means (whether it has ps tasks, which flags it takes) is asked of `tfhp.modes`,
never read from its name.
"""
import dataclasses

from tfhp import modes


@dataclasses.dataclass(frozen=True)
class Preset:
    """One way to run a job.

    Attributes:
      label: the row's name in a study's table.
      update: the --variable_update (a `tfhp.modes` strategy).
      graph_mode: a `tfhp.modes` graph mode; `modes.LOCAL`: one process.
      synchronous: False: --cross_replica_sync=false.
      num_ps: ps tasks; None: one where the strategy keeps variables on ps tasks, else none.
      controller: the launcher starts an in-graph client task of its own.
      options: further `tfhp.config.ReplicationConfig` fields, (name, value) pairs; each is
        also the tfhp flag of that name.
      colocated_ps: on links, a ps task on each worker's host, sharing its NIC
        (`launch_job(colocate_ps=True)`): as many ps tasks as workers, num_ps unused.
    """
    label: str
    update: str = modes.DEFAULT_STRATEGY
    graph_mode: str = modes.BETWEEN_GRAPH
    synchronous: bool = True
    num_ps: int = None
    controller: bool = False
    options: tuple = ()
    colocated_ps: bool = False

    @property
    def ps_tasks(self):
        """The ps tasks of its jobs."""
        if self.num_ps is not None:
            return self.num_ps
        return 1 if modes.strategy(self.update).uses_ps else 0

    @property
    def cluster(self):
        """Whether it runs as a job (`tfhp.launch`), not as one `python -m tfhp` process."""
        return modes.graph_mode(self.graph_mode).cluster

    def args(self):
        """Its tfhp flags."""
        args = ['--variable_update=' + self.update]
        mode = modes.graph_mode(self.graph_mode)
        if mode.cluster and mode.one_graph:
            args.append('--graph_mode=' + self.graph_mode)
        if not self.synchronous:
            args.append('--cross_replica_sync=false')
        return args + ['--%s=%s' % (name, str(value).lower() if isinstance(value, bool)
                                    else value) for name, value in self.options]

    def config_fields(self):
        """Its (ReplicationConfig, ClusterConfig) fields, for a run built in-process."""
        return (dict(self.options, variable_update=self.update),
                {'cross_replica_sync': self.synchronous})


def _local(label, update=modes.DEFAULT_STRATEGY, synchronous=True, **options):
    """A one-process preset, the towers on this process's devices."""
    return Preset(label, update, modes.LOCAL, synchronous, options=tuple(options.items()))


def _between_graph(label_format):
    """Each between-graph strategy synchronous, and asynchronous where it can be."""
    presets = []
    for name in modes.names(lambda s: s.graph_per_worker):
        if not modes.strategy(name).asynchronous:
            presets.append(Preset(label_format % name, name))
            continue
        presets += [Preset(label_format % ('%s %s' % (name, kind)), name, synchronous=sync)
                    for kind, sync in (('sync', True), ('async', False))]
    return presets


def _by_label(presets):
    return {p.label: p for p in presets}


REPLICATION = _by_label([
    _local('parameter_server'),
    _local('parameter_server_staged', staged_vars=True),
    _local('parameter_server_async', synchronous=False),
    _local('independent', 'independent'),
    _local('replicated', 'replicated'),
    _local('replicated_pscpu#2', 'replicated', all_reduce_spec='pscpu#2'),
    _local('replicated_psgpu', 'replicated', all_reduce_spec='psgpu'),
    _local('replicated_xring', 'replicated', all_reduce_spec='xring'),
    _local('replicated_collective', 'replicated', all_reduce_spec='collective'),
    _local('replicated_hierarchical_copy', 'replicated', hierarchical_copy=True),
    _local('replicated_xring_repacking2', 'replicated', all_reduce_spec='xring',
           gradient_repacking=2),
    _local('replicated_xring_small_grads', 'replicated', all_reduce_spec='pscpu:4k:xring',
           agg_small_grads_max_bytes=65536),
    _local('replicated_xring_bfloat16', 'replicated', all_reduce_spec='xring',
           gradient_transfer_dtype='bfloat16'),
])

DISTRIBUTED = _by_label(_between_graph('%s') + [
    Preset('in-graph sync', graph_mode=modes.IN_GRAPH),
    Preset('in-graph async', graph_mode=modes.IN_GRAPH, synchronous=False),
    Preset('in-graph sync, controller task', graph_mode=modes.IN_GRAPH, controller=True),
])

ABLATIONS = _by_label([
    _local('parameter_server'),
    _local('parameter_server staged_vars', staged_vars=True),
    _local('independent', 'independent'),
    _local('replicated (copy to CPU)', 'replicated'),
    _local('replicated pscpu', 'replicated', all_reduce_spec='pscpu'),
    _local('replicated xring', 'replicated', all_reduce_spec='xring'),
    _local('replicated collective', 'replicated', all_reduce_spec='collective'),
    _local('replicated nccl', 'replicated', all_reduce_spec='nccl'),
    Preset('between-graph parameter_server sync', 'parameter_server'),
    Preset('between-graph parameter_server async', 'parameter_server', synchronous=False),
    Preset('between-graph distributed_replicated', 'distributed_replicated'),
    Preset('between-graph collective_all_reduce', 'collective_all_reduce'),
])

# A bucket larger than any model's gradients together: --fusion_bucket_bytes as one pack.
ONE_PACK_BYTES = 1 << 40
# The chunked ps transfers' chunks in these studies (--ps_chunk_bytes). The last chunk of each
# ps task's chain is pulled after every push, so the chunks must be small beside a K-th of the
# model: null_dense's 16 MiB in 32.
PIPELINE_BYTES = 512 << 10


def _ps_transfer(label, name, chunk_bytes=PIPELINE_BYTES, window_bytes=0, group_bytes=0,
                 num_ps=None, colocated_ps=False):
    """A synchronous distributed_replicated preset through ps transfer `name` (a row of
    `tfhp.modes.TRANSFERS`) with the sizes its row takes."""
    sizes = [('ps_chunk_bytes', chunk_bytes), ('ps_window_bytes', window_bytes),
             ('ps_group_bytes', group_bytes)]
    return Preset(label, 'distributed_replicated', num_ps=num_ps, colocated_ps=colocated_ps,
                  options=(('ps_transfer', name),) + tuple((k, v) for k, v in sizes if v))


LINKS = {
    'ps': Preset('parameter_server, 1 ps', 'parameter_server'),
    'ps2': Preset('parameter_server, 2 ps', 'parameter_server', num_ps=2),
    # tf_cnn_benchmarks' whole step: every gradient up, then every variable down.
    'replicated': Preset('distributed_replicated, 1 ps', 'distributed_replicated',
                         options=(('ps_transfer', modes.WHOLE_STEP),)),
    # The defaults: pull-clocked in 256 KiB chunks (tfhp.modes.DEFAULT_CHUNK_BYTES).
    'replicated_defaults': Preset('distributed_replicated, defaults, 1 ps',
                                  'distributed_replicated'),
    # The pipelined push-pull: each chunk released on its own.
    'pipelined': _ps_transfer('distributed_replicated pipelined, 1 ps', 'pipelined'),
    'pipelined2': _ps_transfer('distributed_replicated pipelined, 2 ps', 'pipelined', num_ps=2),
    # Pull-clocked: a push leaves once the pull two pushes back is in, not once the receipt
    # of the one before comes back behind the pulls.
    'pull_clocked': _ps_transfer('distributed_replicated pipelined, pull-clocked, 1 ps',
                                 'pull_clocked'),
    # Background pulls: the next forward pass starts on the chunks already pulled, while the
    # later ones still come down.
    'background': _ps_transfer('distributed_replicated background pulls, 1 ps', 'background'),
    'background2': _ps_transfer('distributed_replicated background pulls, 2 ps', 'background',
                                num_ps=2),
    # Two chunks on the way to each ps task at once (--ps_window_bytes): a push need not wait
    # for the ps's receipt of the one before, which comes back behind the pulls.
    'background_window': _ps_transfer(
        'distributed_replicated background pulls, 2-chunk window, 1 ps', 'background',
        window_bytes=2 * PIPELINE_BYTES),
    # And priority pushes: the first layers' gradients pass the later layers' chunks still
    # waiting; two senders to each ps task (the 2-chunk window).
    'background_priority': _ps_transfer(
        'distributed_replicated background pulls, priority pushes, 1 ps', 'priority',
        window_bytes=2 * PIPELINE_BYTES),
    # A ps task beside each worker, sharing its NIC (BytePS's co-located servers): worker k
    # pushes each chunk to its owner and pulls it back once applied, a reduce-scatter and an
    # all-gather made of pipelined transfers, each NIC carrying a ring's 2(W-1)/W of the model
    # each way. Pull-clocked, 256 KiB chunks: six ps tasks hold null_dense's 16 MiB in 11 each.
    'colocated': _ps_transfer('distributed_replicated pull-clocked, a ps beside each worker',
                              'pull_clocked', chunk_bytes=256 << 10, colocated_ps=True),
    # And with priority pushes and background pulls, for a model with compute (BytePS's layout
    # with P3's order), at resnet20's best sizes on 1 ps at 60 Mbit/s: 32 KiB chunks, window
    # and groups.
    'colocated_priority': _ps_transfer(
        'distributed_replicated background pulls, priority pushes, 32 KiB, a ps beside each '
        'worker', 'priority', chunk_bytes=32 << 10, window_bytes=32 << 10,
        group_bytes=32 << 10, colocated_ps=True),
    # TensorFlow's own chunks on the ring (--collective_subdivs=0), and tfhp's default (4).
    'all_reduce': Preset('collective_all_reduce', 'collective_all_reduce',
                         options=(('collective_subdivs', 0),)),
    'all_reduce_defaults': Preset('collective_all_reduce, defaults', 'collective_all_reduce'),
    # More chunks in flight on the ring (--collective_subdivs).
    'all_reduce_subdivs4': Preset('collective_all_reduce, 4 subdivisions',
                                  'collective_all_reduce', options=(('collective_subdivs', 4),)),
    'all_reduce_subdivs16': Preset('collective_all_reduce, 16 subdivisions',
                                   'collective_all_reduce',
                                   options=(('collective_subdivs', 16),)),
    # Fusion buckets (--fusion_bucket_bytes): 256 KiB buckets, last layer first, each
    # all-reduced as soon as it fills, against one bucket of every gradient (the single pack,
    # all-reduced after the backward pass). 256 KiB cuts resnet20's 1.34 MB into 6 buckets;
    # Horovod's 64 MB would be one pack for every model these studies run.
    'all_reduce_buckets': Preset('collective_all_reduce, 256 KiB buckets',
                                 'collective_all_reduce',
                                 options=(('fusion_bucket_bytes', 256 << 10),)),
    'all_reduce_one_pack': Preset('collective_all_reduce, one pack', 'collective_all_reduce',
                                  options=(('fusion_bucket_bytes', ONE_PACK_BYTES),)),
}


def _combo(mode, synchronous):
    label = '%s_%s' % (mode, 'sync' if synchronous else 'async')
    # The in-graph combinations run in one process, a replica per (virtual) device.
    local = modes.graph_mode(mode).one_graph
    return Preset(label, graph_mode=modes.LOCAL if local else mode, synchronous=synchronous)


COMBOS = _by_label([_combo(modes.IN_GRAPH, True), _combo(modes.IN_GRAPH, False),
                    _combo(modes.BETWEEN_GRAPH, False), _combo(modes.BETWEEN_GRAPH, True)])


def combo(mode, synchronous):
    """The name of the combination of cluster graph mode `mode`, sync or async."""
    return _combo(mode, synchronous).label

"""The ways of running a job that the studies compare, one catalogue built on `tfhp.modes`.

  Preset        a --variable_update, its graph mode, sync or async: its tfhp flags, its ps tasks
  DISTRIBUTED   distributed_bench's modes: every between-graph strategy, sync and async where
                it can be, and in-graph across the cluster (label -> Preset)
  ABLATIONS     the between-graph rows of ablations' variable_update (label -> Preset)
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
    """
    label: str
    update: str = modes.DEFAULT_STRATEGY
    graph_mode: str = modes.BETWEEN_GRAPH
    synchronous: bool = True
    num_ps: int = None
    controller: bool = False

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
        return args


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


DISTRIBUTED = _by_label(_between_graph('%s') + [
    Preset('in-graph sync', graph_mode=modes.IN_GRAPH),
    Preset('in-graph async', graph_mode=modes.IN_GRAPH, synchronous=False),
    Preset('in-graph sync, controller task', graph_mode=modes.IN_GRAPH, controller=True),
])

ABLATIONS = _by_label([
    Preset('between-graph parameter_server sync', 'parameter_server'),
    Preset('between-graph parameter_server async', 'parameter_server', synchronous=False),
    Preset('between-graph distributed_replicated', 'distributed_replicated'),
    Preset('between-graph collective_all_reduce', 'collective_all_reduce'),
])

LINKS = {
    'ps': Preset('parameter_server, 1 ps', 'parameter_server'),
    'ps2': Preset('parameter_server, 2 ps', 'parameter_server', num_ps=2),
    'replicated': Preset('distributed_replicated, 1 ps', 'distributed_replicated'),
    'all_reduce': Preset('collective_all_reduce', 'collective_all_reduce'),
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

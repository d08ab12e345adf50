"""The table of graph modes and variable-update strategies, and what each supports.

Pure Python, no TensorFlow: `tfhp.config` reads it before TensorFlow is imported. Every rule
about a mode or a strategy (the flag checks, the manager factory, diagnose, the link bound,
sweep, the studies) asks this table a question (`strategy(name).uses_ps`); no other module
compares their names as strings (tests/modes_test.py checks the tree for it). A new strategy is
one row here plus its builder in `tfhp.replication` (docs/extending.md).
"""
import dataclasses

LOCAL, IN_GRAPH, BETWEEN_GRAPH = 'local', 'in_graph', 'between_graph'


@dataclasses.dataclass(frozen=True)
class GraphMode:
    """How the graphs of a run are laid out.

    Attributes:
      name: the mode's name ('local' has no flag: it is a run without a cluster).
      cluster: whether its tasks run on TensorFlow's gRPC runtime.
      graph_per_worker: each worker task builds a graph of its own (between-graph); False: one
        client builds every tower (one process, or an in-graph client driving a cluster).
      doc: one line for --help and the docs.
    """
    name: str
    cluster: bool
    graph_per_worker: bool
    doc: str

    @property
    def one_graph(self):
        """Whether one client builds (and steps) every tower of the run."""
        return not self.graph_per_worker


GRAPH_MODES = {m.name: m for m in (
    GraphMode(LOCAL, cluster=False, graph_per_worker=False,
              doc='one process, towers on its own devices'),
    GraphMode(IN_GRAPH, cluster=True, graph_per_worker=False,
              doc='one client builds towers on every worker task and drives them'),
    GraphMode(BETWEEN_GRAPH, cluster=True, graph_per_worker=True,
              doc='a graph per worker task, variables shared through the ps tasks or peers'),
)}
# The modes --graph_mode chooses between (a cluster job's).
CLUSTER_GRAPH_MODES = tuple(name for name, m in GRAPH_MODES.items() if m.cluster)


@dataclasses.dataclass(frozen=True)
class Strategy:
    """One --variable_update: where variables live and how gradients meet.

    Attributes:
      name: the --variable_update value.
      one_graph: runs with every tower in one graph (one process, or an in-graph cluster).
      graph_per_worker: runs as a graph per worker task (between-graph).
      needs_cluster: only runs as a cluster job.
      uses_ps: between graphs, variables live on the ps tasks (a job needs --ps_hosts).
      tower_all_reduce: all-reduces the towers' gradients in one graph: --all_reduce_spec,
        --hierarchical_copy and the packing flags apply, and --gradient_transfer_dtype narrows
        the all-reduce.
      worker_all_reduce: between graphs, workers exchange gradients among themselves (a
        collective group, no ps).
      asynchronous: can take --cross_replica_sync=false.
      spares: synchronous steps can aggregate fewer replicas than run (--replicas_to_aggregate).
      staged_reads: --staged_vars (one-step-stale reads through staging areas) applies.
      partitions: --partition_min_bytes splits its variables over the ps tasks.
      staleness: asynchronous replicas measure gradient staleness and take the remedies.
      pipelines: its synchronous steps can push, apply and pull each variable (chunk) on its
        own (--ps_pipeline_bytes): its workers keep copies for the pulls to fill.
      downlink_deltas: its workers' copies can follow compressed deltas the chief publishes
        (--downlink_compression, `tfhp.replication.downlink`).
      aggregates: the replicas' gradients are combined into one update (False: each replica
        trains alone, the upper bound of scaling with no communication).
      graph_mode: the graph mode a cluster job of this strategy runs in when --graph_mode is
        left out ('': the flag's default, between_graph).
      doc: one line for --help and the docs.
      evaluated_as: a strategy that needs a cluster: the one --eval in one process builds
        instead, as tf_cnn_benchmarks evaluates a distributed run ('': itself).
    """
    name: str
    one_graph: bool
    graph_per_worker: bool
    needs_cluster: bool = False
    uses_ps: bool = False
    tower_all_reduce: bool = False
    worker_all_reduce: bool = False
    asynchronous: bool = False
    spares: bool = False
    staged_reads: bool = False
    partitions: bool = False
    staleness: bool = False
    pipelines: bool = False
    downlink_deltas: bool = False
    aggregates: bool = True
    graph_mode: str = ''
    doc: str = ''
    evaluated_as: str = ''

    def runs_in(self, mode):
        """Whether this strategy runs in GraphMode `mode`."""
        return (self.graph_per_worker if mode.graph_per_worker else
                self.one_graph and (mode.cluster or not self.needs_cluster))


STRATEGIES = {s.name: s for s in (
    Strategy('parameter_server', one_graph=True, graph_per_worker=True, uses_ps=True,
             asynchronous=True, spares=True, staged_reads=True, partitions=True,
             staleness=True,
             doc='variables on the parameter devices (ps tasks); gradients meaned there'),
    Strategy('replicated', one_graph=True, graph_per_worker=False, tower_all_reduce=True,
             doc='a copy of every variable per tower; gradients all-reduced'),
    Strategy('independent', one_graph=True, graph_per_worker=False, aggregates=False,
             doc='a copy per tower, each trained on its own gradients (no aggregation)'),
    Strategy('distributed_replicated', one_graph=False, graph_per_worker=True,
             needs_cluster=True, uses_ps=True, asynchronous=True, spares=True,
             pipelines=True, downlink_deltas=True,
             doc='a local copy per worker, master copies on the ps tasks',
             evaluated_as='replicated'),
    # tf_cnn_benchmarks' name for replicated across a cluster's workers in one graph, which its
    # command lines give without a graph mode: the row implies it.
    Strategy('distributed_all_reduce', one_graph=True, graph_per_worker=False,
             needs_cluster=True, tower_all_reduce=True, graph_mode=IN_GRAPH,
             doc='replicated across the workers in one graph (tf_cnn_benchmarks\' name): one '
                 'client (--controller_host, else worker 0) all-reduces every tower\'s '
                 'gradients (--all_reduce_spec); implies --graph_mode=in_graph',
             evaluated_as='replicated'),
    Strategy('collective_all_reduce', one_graph=False, graph_per_worker=True,
             needs_cluster=True, worker_all_reduce=True,
             doc='every worker holds the variables; gradients all-reduced among the workers',
             evaluated_as='replicated'),
)}
DEFAULT_STRATEGY = 'parameter_server'


def register(row):
    """Adds a Strategy row at run time (a script's own strategy; one in the tree is a row of
    STRATEGIES above). `tfhp.replication.register_strategy` calls this with its builders."""
    if row.name in STRATEGIES:
        raise ValueError('variable_update %r is registered twice' % row.name)
    STRATEGIES[row.name] = row


def graph_mode(name):
    """The GraphMode named `name`; ValueError naming the known ones otherwise."""
    return _lookup(GRAPH_MODES, name, 'graph mode')


def strategy(name):
    """The Strategy named `name` (a --variable_update); ValueError naming the known ones."""
    return _lookup(STRATEGIES, name, 'variable_update')


def names(predicate=None, table=None):
    """Names of the strategies (or of `table`'s rows) for which predicate(row) holds."""
    rows = (STRATEGIES if table is None else table).values()
    return tuple(r.name for r in rows if predicate is None or predicate(r))


def _lookup(table, name, what):
    try:
        return table[name]
    except KeyError:
        raise ValueError('unknown %s %r; known: %s' % (what, name, ', '.join(table))) from None

"""The table of graph modes and variable-update strategies, and what each supports.

Pure Python, no TensorFlow: `tfhp.config` reads it before TensorFlow is imported. Every rule
about a mode or a strategy (the flag checks, the manager factory, diagnose, the link bound,
sweep, the studies) asks this table a question (`strategy(name).uses_ps`); no other module
compares their names as strings (tests/modes_test.py checks the tree for it). A new strategy is
one row here plus its builder in `tfhp.replication` (docs/extending.md).

The table of ps transfers (`TRANSFERS`, --ps_transfer) is the same for how a synchronous
between-graph worker's gradients reach the ps tasks and its variables come back: each rule
about a transfer (which strategies take it, which sizes, spares and downlink deltas) is read
from its row by `check_transfer`; the objects that build each one are `tfhp.replication.transfers`.
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
        own (a chunked --ps_transfer): its workers keep copies for the pulls to fill.
      downlink_deltas: its workers' copies can follow compressed deltas the chief publishes
        (--downlink_compression, `tfhp.replication.downlink`).
      ps_transfer: the `TRANSFERS` row its synchronous between-graph steps take when
        --ps_transfer is left out ('': it has no ps transfer).
      worker_copies: its workers compute on copies of the variables, refreshed from the ps
        tasks after each update: a step's reads are not overlapped with its forward pass
        (the step model, `tfhp.prediction.step_model`).
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
    ps_transfer: str = ''
    worker_copies: bool = False
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
             staleness=True, ps_transfer='whole_step',
             doc='variables on the parameter devices (ps tasks); gradients meaned there'),
    Strategy('replicated', one_graph=True, graph_per_worker=False, tower_all_reduce=True,
             doc='a copy of every variable per tower; gradients all-reduced'),
    Strategy('independent', one_graph=True, graph_per_worker=False, aggregates=False,
             doc='a copy per tower, each trained on its own gradients (no aggregation)'),
    Strategy('distributed_replicated', one_graph=False, graph_per_worker=True,
             needs_cluster=True, uses_ps=True, asynchronous=True, spares=True,
             pipelines=True, downlink_deltas=True, ps_transfer='pull_clocked',
             worker_copies=True,
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




@dataclasses.dataclass(frozen=True)
class Transfer:
    """One --ps_transfer: how a synchronous between-graph worker's gradients reach the ps
    tasks and the step's variables come back (`tfhp.replication.transfers` builds each).

    Attributes:
      name: the --ps_transfer value.
      chunked: variables over --ps_chunk_bytes are cut into chunks, and each variable or chunk
        is pushed, applied and released on its own (a token queue each), in a chain per ps
        task, last variable first; needs a strategy whose row `pipelines`. False: every
        variable pushed at once, one step token releases them all.
      paced_by_pulls: a push leaves once the pull PULL_LAG pushes back in its chain is in,
        not once the ps's receipt of the push before comes back.
      background_pulls: the step ends once the chief applied it; the pulls run in a thread
        of the worker's, and each read of the next step waits for its own variable's pull.
      priority: gradients leave in forward order among those made, from sender threads.
      window: takes --ps_window_bytes: bytes on the way to each ps task at once.
      groups: takes --ps_group_bytes: small gradients of a ps task pushed together.
      spares: takes --replicas_to_aggregate below the workers (spare replicas).
      downlink_deltas: takes --downlink_compression (every worker applies every delta).
      doc: one line for --help and the docs.
    """
    name: str
    chunked: bool
    paced_by_pulls: bool = False
    background_pulls: bool = False
    priority: bool = False
    window: bool = False
    groups: bool = False
    spares: bool = True
    downlink_deltas: bool = True
    doc: str = ''


WHOLE_STEP = 'whole_step'
TRANSFERS = {t.name: t for t in (
    Transfer(WHOLE_STEP, chunked=False,
             doc='tf_cnn_benchmarks\' transfer: every gradient pushed, one step token releases '
                 'every variable, then every pull'),
    Transfer('pipelined', chunked=True, window=True,
             doc='each variable or chunk pushed in a chain per ps task, each push after the '
                 'ps\'s receipt of the one before (or a window of bytes), each pulled once '
                 'applied'),
    Transfer('pull_clocked', chunked=True, paced_by_pulls=True,
             doc='the pipelined chain, each push leaving once the pull two pushes back is in'),
    Transfer('background', chunked=True, background_pulls=True, window=True, spares=False,
             downlink_deltas=False,
             doc='the pipelined chain; the step ends once applied and the pulls run in a '
                 'thread, the next forward pass waiting for each variable\'s own pull'),
    Transfer('priority', chunked=True, background_pulls=True, priority=True, window=True,
             groups=True, spares=False, downlink_deltas=False,
             doc='background pulls, and gradients pushed in forward order among those made, '
                 'from sender threads'),
)}
# The chunks of a chunked transfer when --ps_chunk_bytes is left out. Perf: pull-clocked
# 256 KiB chunks are the measured best of the 1 Gbit/s grid: 1.06 times the duplex bound
# against 2.03 for the whole step (null_dense, 2 workers, 1 ps; docs/results.md, #26).
DEFAULT_CHUNK_BYTES = 256 << 10


def transfer_of(strategy_row, name=''):
    """The Transfer row a synchronous between-graph job of `strategy_row` takes: `name`'s
    (--ps_transfer), or the strategy's default ('' given); None where the strategy has no
    ps transfer and none is named (strategy_row None: none but `name`)."""
    name = name or (strategy_row.ps_transfer if strategy_row else '')
    return _lookup(TRANSFERS, name, 'ps_transfer') if name else None


def check_transfer(row, strategy_row, chunk_bytes=0, window_bytes=0, group_bytes=0,
                   spares=False, downlink=False):
    """Every rule about a transfer, read from its row: the first broken one's message (naming
    the flag at fault), or None. strategy_row: the job's `Strategy` (None: not checked);
    `spares`: fewer replicas aggregated than run; `downlink`: compressed downlink deltas."""
    named = '--ps_transfer=%s' % row.name
    if strategy_row and row.chunked and not strategy_row.pipelines:
        return '%s pushes chunks, which needs --variable_update in %s; %s takes %s' % (
            named, ', '.join(names(lambda s: s.pipelines)), strategy_row.name,
            strategy_row.ps_transfer or 'no ps transfer')
    for flag, size, takes in (('ps_chunk_bytes', chunk_bytes, row.chunked),
                              ('ps_window_bytes', window_bytes, row.window),
                              ('ps_group_bytes', group_bytes, row.groups)):
        if size < 0:
            return '--%s=%d must be >= 0' % (flag, size)
        if size and not takes:
            return '--%s=%d does not apply to %s; the transfers that take it: %s' % (
                flag, size, named, ', '.join(names(
                    lambda t, flag=flag: getattr(t, _TAKES[flag]), TRANSFERS)))
    if spares and not row.spares:
        return '%s needs every worker in each step: drop --replicas_to_aggregate' % named
    if downlink and not row.downlink_deltas:
        return '%s pulls copies of the masters: drop --downlink_compression' % named
    return None


_TAKES = {'ps_chunk_bytes': 'chunked', 'ps_window_bytes': 'window', 'ps_group_bytes': 'groups'}


def old_transfer_spelling(pipeline_bytes=0, pipeline_window=0, background_pulls=False,
                          push_priority=False, push_fusion_bytes=0, pull_clock=False):
    """(--ps_transfer, --ps_chunk_bytes, --ps_window_bytes, --ps_group_bytes) the flags of
    earlier versions named (--ps_pipeline_bytes, --ps_pipeline_window, --ps_background_pulls,
    --ps_push_priority, --ps_push_fusion_bytes, --ps_pull_clock): the row whose chunked,
    background pulls, priority and pacing they set. ValueError when no row has them."""
    wanted = (bool(pipeline_bytes), bool(background_pulls), bool(push_priority),
              bool(pull_clock))
    for row in TRANSFERS.values():
        if (row.chunked, row.background_pulls, row.priority, row.paced_by_pulls) == wanted:
            return row.name, pipeline_bytes, pipeline_window, push_fusion_bytes
    raise ValueError('--ps_pipeline_bytes=%d, --ps_background_pulls=%s, --ps_push_priority=%s, '
                     '--ps_pull_clock=%s name no transfer; choose --ps_transfer from %s'
                     % (pipeline_bytes, bool(background_pulls), bool(push_priority),
                        bool(pull_clock), ', '.join(TRANSFERS)))


def register_transfer(row):
    """Adds a Transfer row at run time (a script's own transfer;
    `tfhp.replication.transfers.register` calls this with its class)."""
    if row.name in TRANSFERS:
        raise ValueError('ps_transfer %r is registered twice' % row.name)
    TRANSFERS[row.name] = row


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

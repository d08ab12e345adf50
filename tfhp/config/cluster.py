"""ClusterConfig: a multi-process job on the gRPC runtime, and host:port checks."""
import dataclasses
import re
from typing import Optional, Tuple

from tfhp import modes
from tfhp.config import errors

JOB_NAMES = ('ps', 'worker', 'controller')
STRAGGLER_MODES = ('compute', 'before_step')
GRAPH_MODES = modes.CLUSTER_GRAPH_MODES
# What every stateful op of TensorFlow takes as a container name (StagingArea refuses '_').
_CONTAINER = re.compile(r'^[A-Za-z0-9.][A-Za-z0-9.\-]*$')
_ADDRESS = re.compile(r'^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9][A-Za-z0-9.-]*):([0-9]{1,5})$')
def check_address(address, flag):
    """Raises ConfigError unless `address` is host:port with a port in 1..65535."""
    match = _ADDRESS.match(address)
    errors.require(match and 0 < int(match.group(2)) < 65536,
                   '%s: %r is not a host:port address (port 1-65535)', flag, address)


@dataclasses.dataclass(frozen=True)
class ClusterConfig:
    """A multi-process job on TensorFlow's gRPC runtime (tfhp.cluster); empty: one process.

    Attributes:
      job_name: this task's job: 'ps', 'worker' or 'controller'; '' when there is no cluster.
      task_index: this task's index in its job.
      ps_hosts, worker_hosts: host:port of every task of each job.
      controller_host: host:port of the in-graph client when it is not worker 0.
      graph_mode: 'between_graph' (a graph per worker) or 'in_graph' (one client builds towers
        on every worker and drives them through one session).
      cross_replica_sync: synchronous steps (SyncReplicasOptimizer or all-reduce); False:
        every worker applies its own gradients as soon as they are ready.
      replicas_to_aggregate: gradients that make one synchronous step (None: every worker);
        fewer than the workers leaves the rest as spare (backup) replicas.
      straggler_workers: worker indices slowed by straggler_delay_ms every step.
      straggler_delay_ms: injected delay, for experiments on stragglers and spares.
      straggler_mode: 'compute': the delay is an op inside the step, on the worker's device,
        after its forward pass read the variables (a worker slow in compute: its gradients are
        stale by the updates others apply meanwhile); 'before_step': a sleep before the step
        (the worker then reads fresh variables).
      peer_timeout_s: bound on waiting for a peer task to answer or for the chief's init.
      step_timeout_s: bound on one step (a synchronous step waits for other workers).
      save_model_secs: the chief also checkpoints every this many seconds (None: off).
      partition_min_bytes: variables of at least this many bytes are split over the ps tasks
        in equal slices (a fixed-size partitioner); 0 never splits.
      ps_transfer: the `tfhp.modes.TRANSFERS` row of a synchronous between-graph job's steps
        ('': the strategy's own, `tfhp.modes.Strategy.ps_transfer`).
      ps_chunk_bytes: a chunked transfer's chunks: variables over this many bytes are cut
        into chunks of at most this many (0: `tfhp.modes.DEFAULT_CHUNK_BYTES`).
      ps_window_bytes: a transfer with a window: bytes of gradients a worker may have on the
        way to each ps task at once; 0: one push at a time.
      ps_group_bytes: a transfer with groups: consecutive gradients of a ps task each under
        this many bytes are pushed together, in groups of at most this many; 0: each alone.
      linger_s: a serving task serves this many seconds more after the tasks it serves are
        done (or failed, or lost), or until a client releases it (`tfhp.reconnect`), so its
        variables outlive their client; 0: it exits at once.
      serve_clients: a ps task serves clients in containers (`container`), not the job's
        workers: it waits for no worker and watches none, and serves until --linger_s ends
        or a client releases it (`tfhp.search`'s servers).
      container: a worker that is a client of its own (`tfhp.cluster.container_client`): it
        builds its graph in this resource container, initialises its variables itself, trains
        and evaluates as one process does, and resets the container as it ends.
      container_reset: such a client resets its container as it ends; False leaves its
        variables on the ps tasks (what the reset saves: `experiments/cluster_search.py`).
    """
    job_name: str = ''
    task_index: int = 0
    ps_hosts: Tuple[str, ...] = ()
    worker_hosts: Tuple[str, ...] = ()
    controller_host: str = ''
    graph_mode: str = modes.BETWEEN_GRAPH
    cross_replica_sync: bool = True
    replicas_to_aggregate: Optional[int] = None
    straggler_workers: Tuple[int, ...] = ()
    straggler_delay_ms: float = 0.0
    straggler_mode: str = 'compute'
    peer_timeout_s: float = 60.0
    step_timeout_s: float = 600.0
    save_model_secs: Optional[float] = None
    partition_min_bytes: int = 0
    ps_transfer: str = ''
    ps_chunk_bytes: int = 0
    ps_window_bytes: int = 0
    ps_group_bytes: int = 0
    linger_s: float = 0.0
    serve_clients: bool = False
    container: str = ''
    container_reset: bool = True

    def __post_init__(self):
        if not self.job_name:
            errors.require(not (self.ps_hosts or self.worker_hosts or self.controller_host),
                           '--ps_hosts/--worker_hosts/--controller_host need --job_name')
            return
        errors.require_choice(self, 'job_name', JOB_NAMES)
        errors.require(self.worker_hosts, '--job_name=%s needs --worker_hosts', self.job_name)
        for flag, hosts in (('--ps_hosts', self.ps_hosts), ('--worker_hosts', self.worker_hosts),
                            ('--controller_host', (self.controller_host,) if
                             self.controller_host else ())):
            for address in hosts:
                check_address(address, flag)
        every = list(self.ps_hosts) + list(self.worker_hosts) + [self.controller_host]
        duplicates = sorted(set(a for a in every if a and every.count(a) > 1))
        errors.require(not duplicates, 'address %s is given to more than one task', duplicates)
        num_tasks = len(self.hosts(self.job_name))
        errors.require(0 <= self.task_index < num_tasks,
                       '--task_index=%d is outside job %r, which has %d task(s)', self.task_index,
                       self.job_name, num_tasks)
        errors.require_choice(self, 'graph_mode', GRAPH_MODES)
        errors.require(self.mode.one_graph or not self.controller_host,
                       '--controller_host needs --graph_mode=in_graph')
        num_workers = len(self.worker_hosts)
        errors.require(self.replicas_to_aggregate is None or
                       1 <= self.replicas_to_aggregate <= num_workers,
                       '--replicas_to_aggregate=%s must be in 1..%d (the number of workers)',
                       self.replicas_to_aggregate, num_workers)
        errors.require(self.cross_replica_sync or self.replicas_to_aggregate is None,
                       '--replicas_to_aggregate needs --cross_replica_sync')
        bad = [w for w in self.straggler_workers if not 0 <= w < num_workers]
        errors.require(not bad, '--straggler_workers %s: no such worker (there are %d)', bad,
                       num_workers)
        errors.require_at_least(self, 0, 'straggler_delay_ms', 'partition_min_bytes',
                                'ps_chunk_bytes', 'ps_window_bytes', 'ps_group_bytes')
        errors.require_choice(self, 'straggler_mode', STRAGGLER_MODES)
        errors.require_positive(self, 'peer_timeout_s', 'step_timeout_s')
        errors.require_positive(self, 'save_model_secs', optional=True)
        errors.require_at_least(self, 0, 'linger_s')
        errors.require(not self.serve_clients or (self.job_name == 'ps' and self.linger_s),
                       '--serve_clients is for ps tasks and needs --linger_s (the bound on '
                       'serving)')
        errors.require(not self.container or (self.job_name == 'worker' and
                                              self.mode.graph_per_worker),
                       '--container=%s is for a between-graph worker (--job_name=worker)',
                       self.container)
        errors.require(not self.container or _CONTAINER.match(self.container),
                       '--container=%r must be letters, digits, "." or "-", starting with '
                       'a letter, a digit or "."', self.container)
        errors.require(self.container_reset or self.container,
                       '--container_reset=false is for a client in a container (--container)')

    def straggler_delay_s(self, task_index, mode):
        """Seconds worker task_index is delayed each step in `mode` (0: not a straggler)."""
        if task_index in self.straggler_workers and self.straggler_mode == mode:
            return self.straggler_delay_ms / 1000.0
        return 0.0

    @property
    def mode(self):
        """How this task's graph is built: a `tfhp.modes.GraphMode` (local without a cluster)."""
        return modes.graph_mode(self.graph_mode if self.enabled else modes.LOCAL)

    @property
    def enabled(self):
        """Whether this process is one task of a cluster."""
        return bool(self.job_name)

    @property
    def num_workers(self):
        return len(self.worker_hosts)

    def hosts(self, job_name):
        """Addresses of the tasks of `job_name`."""
        if job_name == 'controller':
            return (self.controller_host,) if self.controller_host else ()
        return {'ps': self.ps_hosts, 'worker': self.worker_hosts}[job_name]

    def jobs(self):
        """{job name: addresses} of every non-empty job (a ClusterSpec's dict)."""
        return {job: list(self.hosts(job)) for job in JOB_NAMES if self.hosts(job)}

    def server_jobs(self):
        """The ClusterSpec dict of this task's server: `jobs()`, except that a client in a
        container knows the ps tasks and itself only (a sparse worker job): its master, a
        reset's above all, would otherwise wait for the other clients' slots, which may not run."""
        if not self.container:
            return self.jobs()
        return {'ps': list(self.ps_hosts),
                'worker': {self.task_index: self.worker_hosts[self.task_index]}}

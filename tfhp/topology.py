"""Topology: where towers, variables and input live. An explicit value, never ambient state.

In-graph replication lists every tower this graph builds in `tower_devices` (one client drives
them all); between-graph replication lists only this task's towers. The same step builder serves
both, because it only ever reads this object.
"""
import dataclasses
from typing import Tuple

from tfhp import modes


@dataclasses.dataclass(frozen=True)
class Topology:
    """Devices of one graph.

    Attributes:
      tower_devices: one device string per tower, e.g. ('/cpu:0', '/cpu:1').
      variable_devices: devices a parameter-server manager may place variables on.
      input_device: where input is read and preprocessed (the host CPU).
      is_chief: whether this client initialises, checkpoints and summarises.
      graph_mode: 'local' (one process), 'between_graph' (this graph is one worker task's) or
        'in_graph' (this graph builds towers on every worker task).
      job_name, task_index: the task that builds this graph ('' for one process).
      num_workers: worker tasks of the cluster (1 for one process).
      cluster: ((job, (address, ...)), ...) of the cluster, empty for one process.
      synchronous: whether the towers (or workers) take synchronous steps; False: each replica
        (a tower in one graph, a worker between graphs) applies its gradients alone.
    """
    tower_devices: Tuple[str, ...]
    variable_devices: Tuple[str, ...]
    input_device: str = '/cpu:0'
    is_chief: bool = True
    graph_mode: str = modes.LOCAL
    job_name: str = ''
    task_index: int = 0
    num_workers: int = 1
    cluster: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    synchronous: bool = True

    @property
    def num_towers(self):
        return len(self.tower_devices)

    @property
    def mode(self):
        """The `tfhp.modes.GraphMode` of graph_mode."""
        return modes.graph_mode(self.graph_mode)

    @property
    def in_graph_async(self):
        """Whether the towers of this graph are asynchronous replicas, each stepped by a thread
        of its own (`is_in_graph_async`)."""
        return is_in_graph_async(self.mode, self.synchronous)

    @classmethod
    def local(cls, device='cpu', num_towers=1, local_parameter_device='cpu', synchronous=True):
        """Towers on this process's devices: GPUs, or virtual CPU devices.

        Args:
          device: 'cpu' or 'gpu'.
          num_towers: towers to build; with 'cpu' the session must be created with that many
            virtual CPU devices (`tfhp.session.config_proto(num_cpu_devices=...)`).
          local_parameter_device: 'cpu' keeps parameter-server variables on the host;
            'gpu' spreads them over the tower devices.
          synchronous: False: each tower is an asynchronous replica.
        Returns:
          A Topology.
        """
        towers = tuple('/%s:%d' % (device, i) for i in range(num_towers))
        if local_parameter_device == 'cpu':
            variables = ('/cpu:0',)
        else:
            variables = towers
        return cls(tower_devices=towers, variable_devices=variables, input_device='/cpu:0',
                   synchronous=synchronous)

    @classmethod
    def between_graph(cls, cluster, task_index, device='cpu', num_towers=1, synchronous=True):
        """Worker `task_index`'s towers; variables on the ps tasks' CPUs (or its own CPU).

        Args:
          cluster: {job: [address, ...]} with a 'worker' job and, optionally, a 'ps' job.
          task_index: this worker's index.
          device: 'cpu' or 'gpu': the towers' device kind.
          num_towers: towers on this worker (virtual CPU devices of its server for 'cpu').
          synchronous: False: each worker applies its gradients alone.
        Returns:
          A Topology.
        """
        worker = '/job:worker/task:%d' % task_index
        towers = tuple('%s/%s:%d' % (worker, device, i) for i in range(num_towers))
        variables = tuple('/job:ps/task:%d/cpu:0' % i for i in range(len(cluster.get('ps', ()))))
        return cls(tower_devices=towers, variable_devices=variables or (worker + '/cpu:0',),
                   input_device=worker + '/cpu:0', is_chief=task_index == 0,
                   graph_mode=modes.BETWEEN_GRAPH, job_name='worker', task_index=task_index,
                   num_workers=len(cluster['worker']), cluster=_freeze(cluster),
                   synchronous=synchronous)

    @classmethod
    def in_graph(cls, cluster, job_name, task_index, device='cpu', num_towers=1,
                 synchronous=True):
        """Towers on every worker task, built by one client (`job_name`, `task_index`).

        Args:
          cluster: {job: [address, ...]} with 'worker' and 'ps' jobs.
          job_name, task_index: the client: worker 0 or the controller.
          device: 'cpu' or 'gpu'.
          num_towers: towers per worker.
          synchronous: False: each tower is an asynchronous replica.
        Returns:
          A Topology whose towers are listed worker by worker.
        """
        num_workers = len(cluster['worker'])
        towers = tuple('/job:worker/task:%d/%s:%d' % (w, device, i)
                       for w in range(num_workers) for i in range(num_towers))
        variables = tuple('/job:ps/task:%d/cpu:0' % i for i in range(len(cluster.get('ps', ()))))
        return cls(tower_devices=towers, variable_devices=variables or towers[:1],
                   input_device='/job:%s/task:%d/cpu:0' % (job_name, task_index),
                   is_chief=True, graph_mode=modes.IN_GRAPH, job_name=job_name,
                   task_index=task_index, num_workers=num_workers, cluster=_freeze(cluster),
                   synchronous=synchronous)


def is_in_graph_async(mode, synchronous):
    """The one definition of in-graph asynchronous training: asynchronous towers of one graph
    (one process, or one client driving a cluster), which the runner steps replica by replica.

    Args:
      mode: a `tfhp.modes.GraphMode`.
      synchronous: whether the replicas take synchronous steps.
    """
    return mode.one_graph and not synchronous


def for_config(cfg):
    """The topology of this process's graph in a `tfhp.config.BenchmarkConfig`: its own devices,
    the cluster-wide towers of an in-graph client, or one between-graph worker's; synchronous
    as --cross_replica_sync says (the one place that decides it)."""
    cluster, device = cfg.cluster, cfg.device
    sync = cluster.cross_replica_sync
    if not cluster.mode.cluster:
        return Topology.local(device.device, device.num_devices, device.local_parameter_device,
                              synchronous=sync)
    if cluster.mode.one_graph:
        return Topology.in_graph(cluster.jobs(), cluster.job_name, cluster.task_index,
                                 device.device, device.num_devices, synchronous=sync)
    return Topology.between_graph(cluster.jobs(), cluster.task_index, device.device,
                                  device.num_devices, synchronous=sync)


def _freeze(cluster):
    return tuple(sorted((job, tuple(hosts)) for job, hosts in cluster.items()))

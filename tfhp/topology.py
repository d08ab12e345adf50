"""Topology: where towers, variables and input live. An explicit value, never ambient state.

In-graph replication lists every tower this graph builds in `tower_devices` (one client drives
them all); between-graph replication lists only this task's towers. The same step builder serves
both, because it only ever reads this object.
"""
import dataclasses
from typing import Tuple


@dataclasses.dataclass(frozen=True)
class Topology:
    """Devices of one graph.

    Attributes:
      tower_devices: one device string per tower, e.g. ('/cpu:0', '/cpu:1').
      variable_devices: devices a parameter-server manager may place variables on.
      input_device: where input is read and preprocessed (the host CPU).
      is_chief: whether this client initialises, checkpoints and summarises.
    """
    tower_devices: Tuple[str, ...]
    variable_devices: Tuple[str, ...]
    input_device: str = '/cpu:0'
    is_chief: bool = True

    @property
    def num_towers(self):
        return len(self.tower_devices)

    @classmethod
    def local(cls, device='cpu', num_towers=1, local_parameter_device='cpu'):
        """Towers on this process's devices: GPUs, or virtual CPU devices.

        Args:
          device: 'cpu' or 'gpu'.
          num_towers: towers to build; with 'cpu' the session must be created with that many
            virtual CPU devices (`tfhp.session.config_proto(num_cpu_devices=...)`).
          local_parameter_device: 'cpu' keeps parameter-server variables on the host;
            'gpu' spreads them over the tower devices.
        Returns:
          A Topology.
        """
        towers = tuple('/%s:%d' % (device, i) for i in range(num_towers))
        if local_parameter_device == 'cpu':
            variables = ('/cpu:0',)
        else:
            variables = towers
        return cls(tower_devices=towers, variable_devices=variables, input_device='/cpu:0')

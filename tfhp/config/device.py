"""DeviceConfig: where towers run, and the thread pools."""
import dataclasses

from tfhp.config import errors

DEVICES = ('cpu', 'gpu')


@dataclasses.dataclass(frozen=True)
class DeviceConfig:
    """Where towers run.

    Attributes:
      device: 'cpu' or 'gpu'.
      num_devices: towers in this process (virtual CPU devices when device is 'cpu').
      local_parameter_device: 'cpu' or 'gpu': where parameter-server variables live locally.
      num_intra_threads, num_inter_threads: TensorFlow thread pools; 0 lets TF choose.
    """
    device: str = 'cpu'
    num_devices: int = 1
    local_parameter_device: str = 'cpu'
    num_intra_threads: int = 0
    num_inter_threads: int = 0

    def __post_init__(self):
        errors.require_choice(self, 'device', DEVICES)
        errors.require_choice(self, 'local_parameter_device', DEVICES)
        errors.require_at_least(self, 1, 'num_devices')
        errors.require_at_least(self, 0, 'num_intra_threads', 'num_inter_threads')
        errors.require(not (self.device == 'cpu' and self.local_parameter_device == 'gpu'),
                       '--local_parameter_device=gpu needs --device=gpu')

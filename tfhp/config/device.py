"""DeviceConfig: where towers run, the thread pools and the CPU threading runtime's settings."""
import dataclasses

from tfhp.config import errors

DEVICES = ('cpu', 'gpu')
# tf_cnn_benchmarks' defaults for the Intel OpenMP settings it exports with --mkl.
KMP_DEFAULTS = {'kmp_blocktime': 0, 'kmp_settings': 1,
                'kmp_affinity': 'granularity=fine,verbose,compact,1,0'}


@dataclasses.dataclass(frozen=True)
class DeviceConfig:
    """Where towers run.

    Attributes:
      device: 'cpu' or 'gpu'.
      num_devices: towers in this process (virtual CPU devices when device is 'cpu').
      local_parameter_device: 'cpu' or 'gpu': where parameter-server variables live locally.
      num_intra_threads, num_inter_threads: TensorFlow thread pools; 0 lets TF choose (for
        the inter-op pool on the RecordInput path, `tfhp.session.inter_op_threads` does).
      mkl: export the Intel OpenMP settings below (KMP_BLOCKTIME, KMP_SETTINGS, KMP_AFFINITY,
        and OMP_NUM_THREADS from num_intra_threads) before TensorFlow starts, as
        tf_cnn_benchmarks does; they act only on a build whose oneDNN runs on OpenMP.
      kmp_blocktime: ms an OpenMP thread spins after a parallel region before it sleeps.
      kmp_settings: 1 makes the OpenMP runtime print its settings.
      kmp_affinity: OpenMP thread placement.
    """
    device: str = 'cpu'
    num_devices: int = 1
    local_parameter_device: str = 'cpu'
    num_intra_threads: int = 0
    num_inter_threads: int = 0
    mkl: bool = False
    kmp_blocktime: int = KMP_DEFAULTS['kmp_blocktime']
    kmp_settings: int = KMP_DEFAULTS['kmp_settings']
    kmp_affinity: str = KMP_DEFAULTS['kmp_affinity']

    def __post_init__(self):
        errors.require_choice(self, 'device', DEVICES)
        errors.require_choice(self, 'local_parameter_device', DEVICES)
        errors.require_at_least(self, 1, 'num_devices')
        errors.require_at_least(self, 0, 'num_intra_threads', 'num_inter_threads')
        errors.require(not (self.device == 'cpu' and self.local_parameter_device == 'gpu'),
                       '--local_parameter_device=gpu needs --device=gpu')
        errors.require_at_least(self, 0, 'kmp_blocktime')
        errors.require_choice(self, 'kmp_settings', (0, 1))
        for flag, default in KMP_DEFAULTS.items():
            errors.require(self.mkl or getattr(self, flag) == default,
                           '--%s is exported with --mkl only; add --mkl', flag)

    def openmp_environment(self):
        """{variable: value} that --mkl exports (empty without it)."""
        if not self.mkl:
            return {}
        variables = {'KMP_BLOCKTIME': str(self.kmp_blocktime),
                     'KMP_SETTINGS': str(self.kmp_settings), 'KMP_AFFINITY': self.kmp_affinity}
        if self.num_intra_threads:
            variables['OMP_NUM_THREADS'] = str(self.num_intra_threads)
        return variables

"""The step model against TensorFlow's published 2017 scaling results, from documented inputs.

For each published run: the one-GPU images/sec the same table gives (so compute per step is
batch / that), the mode and the machines (PCIe, NIC, host memory) with their sources, and a
profile of the model's layers measured here (`python -m tfhp.calibrate`: their gradient bytes
and the shares of compute between them; the total is rescaled to the GPU's). Nothing is fitted
to the speedups: the table prints the predicted speedup beside the published one and the error.

Sources (docs/results.md#the-step-model-against-published-scaling lists them with the figures):
  S1  TensorFlow's benchmarks page, May 2017 (tensorflow/docs_src/performance/benchmarks.md at
      commit 5984ffe): images/sec per GPU count, batch sizes, modes, ps counts.
  S2  PCIe 3.0 x16: 32 GB/s both ways, 15.75 GB/s each way.
  S3  NVIDIA DGX-1 system architecture (WP-08437-001): the P100s hang in pairs off four PCIe
      switches; two Xeon E5-2698 v4.
  S4  AWS: p2.8xlarge, 8 K80 GPUs (4 boards, one x16 link each), 10 Gbps in a placement group,
      Xeon E5-2686 v4.
  S5  Intel: a Broadwell-EP socket's four DDR4-2400 channels, 76.8 GB/s.

  python -m experiments.published_scaling   # the profiles in experiments/profiles/
  python -m experiments.published_scaling --resnet50=resnet50.json --inception3=inception3.json

experiments/profiles/ holds the two profiles measured here (`python -m tfhp.calibrate
--model=resnet50 --batch_size=32`, and the same for inception3; 2026-11-25, the 2-core AMD EPYC
VM): only their layers' shares of compute and their gradient bytes are used.
"""
import dataclasses
import json
import os

from absl import flags

from experiments import frame
from tfhp.emulation import profile as profile_lib
from tfhp.prediction import step_model

FLAGS = flags.FLAGS
PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'profiles', '%s.json')

PCIE_BPS = 15.75e9 * 8        # S2: one x16 link, each way
HOST_MEMORY_BYTES_S = 2 * 76.8e9  # S5: two sockets; an update reads a variable and a gradient
                                  # and writes the variable: 3 S bytes
TEN_GBIT = 10e9               # S4


@dataclasses.dataclass(frozen=True)
class Published:
    """One published result: the run's setting and its figures (S1)."""
    system: str
    model: str
    batch_size: int
    one_gpu: float       # images/sec of 1 GPU in the same table
    gpus: int
    images_per_sec: float
    variable_update: str
    cluster: step_model.Cluster

    @property
    def speedup(self):
        return self.images_per_sec / self.one_gpu


def _one_host(gpus):
    """8 GPUs of one host as 8 towers reading and writing the host's variables (variables on
    the CPU, parameter_server): each GPU shares an x16 link with its neighbour (S3, S4), the
    host takes four such links."""
    return step_model.Cluster(num_workers=gpus, num_ps=1, nic_bps=PCIE_BPS / 2,
                              ps_nic_bps=4 * PCIE_BPS)


def _ec2_distributed(num_ps):
    """8 p2.8xlarge (S4) of 8 GPUs, distributed_replicated, the ps tasks on the same hosts."""
    return step_model.Cluster(num_workers=8, towers_per_worker=8, num_ps=num_ps,
                              nic_bps=TEN_GBIT, bus_bps=PCIE_BPS / 2, ps_on_workers=True)


RESULTS = [
    Published('DGX-1, 8 P100', 'inception3', 64, 142, 8, 1131, 'parameter_server',
              _one_host(8)),
    Published('DGX-1, 8 P100', 'resnet50', 64, 219, 8, 1734, 'parameter_server', _one_host(8)),
    Published('GCE, 8 K80', 'inception3', 64, 30.5, 8, 227, 'parameter_server', _one_host(8)),
    Published('GCE, 8 K80', 'resnet50', 64, 51.9, 8, 387, 'parameter_server', _one_host(8)),
    Published('EC2, 64 K80', 'inception3', 64, 29.7, 64, 1783, 'distributed_replicated',
              _ec2_distributed(6)),
    Published('EC2, 64 K80', 'resnet50', 64, 52.4, 64, 2744, 'distributed_replicated',
              _ec2_distributed(4)),
]


def predict(result, layers):
    """The prediction of one published result from the layers of its model's profile."""
    profile = dataclasses.replace(layers, batch_size=result.batch_size).scaled(
        result.batch_size / result.one_gpu, '%s: %g images/sec' % (result.system,
                                                                    result.one_gpu))
    apply_s = 3.0 * profile.gradient_bytes / HOST_MEMORY_BYTES_S
    p = step_model.predict(profile, result.cluster, result.variable_update, apply_s=apply_s)
    # The model's speedup is against one GPU with its own update; S1's against its 1-GPU run.
    speedup = p.images_per_sec / result.one_gpu
    return {'study': 'published_scaling', 'system': result.system, 'model': result.model,
            'gpus': result.gpus, 'mode': result.variable_update,
            'published_speedup': result.speedup, 'predicted_speedup': speedup,
            'error': speedup / result.speedup - 1.0, 'step_ms': 1000 * p.step_s,
            'compute_ms': 1000 * p.compute_s, 'pull_ms': 1000 * p.pull_s,
            'push_tail_ms': 1000 * p.push_tail_s, 'update_ms': 1000 * p.update_s}


TABLE = [('system', 'system', None), ('model', 'model', None), ('GPUs', 'gpus', '%d'),
         ('published', 'published_speedup', '%.2fx'),
         ('predicted', 'predicted_speedup', '%.2fx'), ('error', 'error', '%+.3f'),
         ('step ms', 'step_ms', '%.0f'), ('pull', 'pull_ms', '%.0f'),
         ('push tail', 'push_tail_ms', '%.0f'), ('update', 'update_ms', '%.0f')]


def study():
    """The prediction of every published result whose model's profile is given."""
    profiles = {'resnet50': FLAGS.resnet50, 'inception3': FLAGS.inception3}
    records = [predict(r, profile_lib.load(profiles[r.model])) for r in RESULTS
               if profiles[r.model]]
    frame.report(records, TABLE)
    print(json.dumps({'max_abs_error': max(abs(r['error']) for r in records)}))


if __name__ == '__main__':
    flags.DEFINE_string('resnet50', PROFILES % 'resnet50',
                        'A resnet50 compute profile (its layers).')
    flags.DEFINE_string('inception3', PROFILES % 'inception3',
                        'An inception3 compute profile (its layers).')
    # Predictions from documented inputs: nothing is measured, repeated or seeded.
    frame.main(study, repeats=None, seed=None)

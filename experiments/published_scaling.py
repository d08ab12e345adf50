"""The step model against every point of TensorFlow's benchmarks page of May 2017.

Every synthetic-data point of the page (five models; a DGX-1, 8 K80s on GCE and on EC2, 8-64
K80s on EC2), predicted from the inputs of `experiments/tf_benchmarks_2017.py`, which were
committed, with their sources, before this comparison was: the page's modes, batch sizes and
ps counts, the links' rates and their transports, the devices' memory. Each model's layers
(their variables, and the shares of compute between them) come from a profile measured here
(experiments/profiles/, `python -m tfhp.calibrate`); its compute is set so that the model's
one-GPU step is the page's one-GPU figure. Nothing is fitted to a speedup.

Each point prints the published speedup (images/sec over the same table's one GPU), the
model's and its error, and the error of the naive guess "speedup = N". The last line is JSON:
points, those within 10%, the points the page shows under 90% efficiency ("poor"), and the
mean absolute relative error of the model's and of the naive speedups over them.

  python -m experiments.published_scaling
  python -m experiments.published_scaling --models=resnet50,vgg16 --result_file=points.jsonl
"""
import dataclasses
import json
import os

from absl import flags

from experiments import frame
from experiments import tf_benchmarks_2017 as page
from tfhp.emulation import profile as profile_lib
from tfhp.prediction import placement
from tfhp.prediction import step_model

FLAGS = flags.FLAGS
PROFILES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'profiles', '%s.json')
MODELS = ('inception3', 'resnet50', 'resnet152', 'alexnet', 'vgg16')
POOR = 0.9  # a point the page shows under this efficiency is "poor"
WITHIN = 0.10

PCIE_BPS = page.PCIE3_X16_BYTES_S * 8
PCIE = step_model.Transport(efficiency=page.PCIE_PAYLOAD, overlaps_reads=True)


def _memory_bps(system):
    """One GPU's memory (bits/s): the DGX-1's P100, else a K80's GK210."""
    return 8 * (page.P100_MEMORY_BYTES_S if system == 'dgx1' else page.K80_MEMORY_BYTES_S)


def _apply_s(profile, memory_bytes_s):
    """One SGD update of every variable at this memory rate."""
    return page.SGD_BYTES_PER_VARIABLE_BYTE * profile.gradient_bytes / memory_bytes_s


# Each GPU's own x16 port, and the x16 link that a switch's GPUs share to the host and the
# other switches ('switch', 'cuda_order').
SWITCH = step_model.Uplink(members=page.GPUS_PER_PCIE_SWITCH, bps=PCIE_BPS)


@dataclasses.dataclass(frozen=True)
class Point:
    """What a mode's setting needs of one point: its system, model, batch, GPUs, the model's
    profile, each GPU's PCIe line rate when it reaches the host (two share a switch's x16 link
    once both are in use), the switches in use, and the SGD update's time on a GPU and on the
    host."""
    system: str
    model: str
    batch: int
    gpus: int
    profile: profile_lib.ComputeProfile
    per_gpu_bps: float
    switches: int
    apply_on_gpu_s: float
    apply_on_host_s: float


def _ps_cpu(p):
    """parameter_server, variables on the CPU: each GPU reads and pushes through its port and
    its switch's shared link, the host through the switches in use."""
    return step_model.Cluster(num_workers=p.gpus, num_ps=1, nic_bps=PCIE_BPS,
                              nic_uplink=SWITCH, ps_nic_bps=p.switches * PCIE_BPS,
                              nic_transport=PCIE), 'parameter_server', p.apply_on_host_s


def _ps_gpu(p):
    """parameter_server, variables spread over the GPUs, greedily by size: a GPU's shard
    leaves through its own port, and through its switch's link for the other pairs."""
    held = tuple(placement.ps_gradient_bytes(p.profile, p.gpus))
    return step_model.Cluster(num_workers=p.gpus, num_ps=p.gpus, nic_bps=PCIE_BPS,
                              nic_uplink=SWITCH, ps_on_workers=True, nic_transport=PCIE,
                              ps_gradient_bytes=held), 'parameter_server', p.apply_on_gpu_s


def _copies_gpu(p):
    """replicated without NCCL: gradient i summed on GPU i % N, the sum copied back."""
    held = tuple(placement.round_robin_gradient_bytes(p.profile, p.gpus))
    return step_model.Cluster(num_workers=1, towers_per_worker=p.gpus, num_ps=0,
                              bus_bps=PCIE_BPS, bus_uplink=SWITCH, bus_transport=PCIE,
                              tower_gradient_bytes=held,
                              device_memory_bps=_memory_bps(p.system)), \
        'replicated', p.apply_on_gpu_s


def _nccl(p):
    """replicated with NCCL 1: its ring in device order, NVLink up to 4 GPUs, then PCIe
    through host memory; its stream waits for the compute stream, so its all-reduces run
    after the backward pass ('tf_nccl')."""
    nvlink = p.gpus <= page.NVLINK_RING_MAX_GPUS
    transport = step_model.Transport(
        efficiency=page.NVLINK_PAYLOAD if nvlink else page.PCIE_PAYLOAD,
        message_s=page.NCCL_MESSAGE_S, hop_s=page.NCCL_HOP_S,
        waits_for_compute=True)
    return step_model.Cluster(num_workers=1, towers_per_worker=p.gpus, num_ps=0,
                              bus_bps=page.NVLINK1_BYTES_S * 8 if nvlink else PCIE_BPS,
                              bus_transport=transport), 'replicated', p.apply_on_gpu_s


def _distributed_replicated(p):
    """8 GPUs an EC2 instance, the ps tasks on the instances (their count read from the page),
    gRPC over 10 Gbit/s between them and over loopback within one."""
    if p.gpus == 1:
        # The distributed table's one GPU is taken as one GPU alone, its variables on it: its
        # figures are within 2-4% of the single instance's (29.7 against 30.8 images/sec, 52.4
        # against 51.5, 19.4 against 19.7).
        return step_model.Cluster(num_workers=1, num_ps=0), 'replicated', p.apply_on_gpu_s
    instances = max(p.gpus // 8, 1)
    num_ps = page.distributed_ps(p.model, p.batch, instances)
    tcp = step_model.Transport(efficiency=page.TCP_PAYLOAD, message_s=page.GRPC_MESSAGE_S)
    return step_model.Cluster(
        num_workers=instances, towers_per_worker=min(p.gpus, 8), num_ps=num_ps,
        nic_bps=page.NIC_10GBIT_BPS, nic_transport=tcp, bus_bps=p.per_gpu_bps,
        bus_transport=PCIE, ps_on_workers=True, loopback_bps=page.GRPC_BYTES_S * 8,
        ps_gradient_bytes=tuple(placement.ps_gradient_bytes(p.profile, num_ps))), \
        'distributed_replicated', p.apply_on_host_s


# The page's modes (`tf_benchmarks_2017.MODES`), each a function of a Point to (Cluster,
# variable_update, apply_s).
SETTINGS = {'ps_cpu': _ps_cpu, 'ps_gpu': _ps_gpu, 'copies_gpu': _copies_gpu, 'nccl': _nccl,
            'distributed_replicated': _distributed_replicated}


def setting(system, model, batch, gpus, profile):
    """(Cluster, variable_update, apply_s) of one point, from the page's configuration."""
    point = Point(system, model, batch, gpus, profile,
                  PCIE_BPS / min(gpus, page.GPUS_PER_PCIE_SWITCH),
                  min(-(-gpus // page.GPUS_PER_PCIE_SWITCH), page.PCIE_SWITCHES),
                  _apply_s(profile, _memory_bps(system) / 8),
                  _apply_s(profile, page.HOST_MEMORY_BYTES_S))
    return SETTINGS[page.MODES[(system, model)]](point)


def _predicted(system, model, batch, gpus, profile):
    cluster, update, apply_s = setting(system, model, batch, gpus, profile)
    return step_model.predict(profile, cluster, update, apply_s=apply_s)


def device_profile(layers, system, model, batch, one_gpu):
    """The model's layers at `batch`, their compute scaled so that the step model's one-GPU
    step of this system is the page's one-GPU figure (bisection: the step grows with it)."""
    target = batch / one_gpu
    base = dataclasses.replace(layers, batch_size=batch)

    def step(compute_s):
        profile = base.scaled(compute_s, '%s: %g images/sec' % (system, one_gpu))
        return _predicted(system, model, batch, 1, profile).step_s, profile
    low, high = 0.0, target
    if step(1e-9)[0] >= target:
        raise ValueError('%s %s: the one-GPU step without compute is already %.3f s, more '
                         'than the page\'s %.3f s' % (system, model, step(1e-9)[0], target))
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if step(mid)[0] < target else (low, mid)
    return step(low)[1]


def predict(system, model, batch, figures, layers):
    """A record per GPU count above one of one table column (`figures`: {GPUs: images/sec})."""
    one_gpu = figures[1]
    profile = device_profile(layers, system, model, batch, one_gpu)
    records = []
    for gpus in sorted(g for g in figures if g > 1):
        p = _predicted(system, model, batch, gpus, profile)
        published = figures[gpus] / one_gpu
        predicted = p.images_per_sec / one_gpu
        records.append({
            'study': 'published_scaling', 'system': system, 'model': model, 'batch': batch,
            'gpus': gpus, 'mode': page.MODES[(system, model)],
            'published_speedup': published, 'predicted_speedup': predicted,
            'error': predicted / published - 1.0, 'naive_error': gpus / published - 1.0,
            'published_efficiency': published / gpus, 'step_ms': 1000 * p.step_s,
            'compute_ms': 1000 * p.compute_s, 'pull_ms': 1000 * p.pull_s,
            'push_tail_ms': 1000 * p.push_tail_s, 'update_ms': 1000 * p.update_s})
    return records


def summary(records):
    """The study's verdict: points, those within 10%, the poor points (published efficiency
    under 90%), and the model's and the naive guess's mean absolute error over them."""
    poor = [r for r in records if r['published_efficiency'] < POOR]

    def mae(key):
        return sum(abs(r[key]) for r in poor) / len(poor) if poor else None
    return {'points': len(records),
            'within_10': sum(abs(r['error']) <= WITHIN for r in records),
            'poor_points': len(poor), 'model_mae_poor': mae('error'),
            'naive_mae_poor': mae('naive_error')}


TABLE = [('system', 'system', None), ('model', 'model', None), ('batch', 'batch', '%d'),
         ('GPUs', 'gpus', '%d'), ('mode', 'mode', None),
         ('published', 'published_speedup', '%.2fx'),
         ('predicted', 'predicted_speedup', '%.2fx'), ('error', 'error', '%+.3f'),
         ('naive error', 'naive_error', '%+.3f'), ('step ms', 'step_ms', '%.0f'),
         ('pull', 'pull_ms', '%.0f'), ('push tail', 'push_tail_ms', '%.0f'),
         ('update', 'update_ms', '%.1f')]


def study():
    """The prediction of every point of the page (of --models)."""
    layers = {m: profile_lib.load(PROFILES % m) for m in FLAGS.models}
    records = [r for system, model, batch, figures in page.POINTS if model in layers
               for r in predict(system, model, batch, figures, layers[model])]
    frame.report(records, TABLE)
    print(json.dumps(summary(records)))


if __name__ == '__main__':
    flags.DEFINE_list('models', list(MODELS), 'The page\'s models to predict (a profile each '
                      'in experiments/profiles/).')
    # Predictions from documented inputs: nothing is measured, repeated or seeded.
    frame.main(study, repeats=None, seed=None)

"""The inputs of `experiments.published_scaling`, fixed before any prediction was compared with
them: every synthetic-data point of TensorFlow's benchmarks page of May 2017, how each run was
configured, and the documented figures of the machines and transports they ran on, each with
its source. Data only: the study reads this module, nothing here is derived from an error.

A point is (system, model, batch per GPU, GPUs, images/sec). The page's real-data tables are
left out (input pipelines, not the step). Its one-GPU rows give each device's compute; the
speedups compared are those of the GPU counts above one.
"""

SOURCES = {
    'page': 'TensorFlow, "Benchmarks" (May 2017): tensorflow/tensorflow '
            'tensorflow/docs_src/performance/benchmarks.md at 5984ffe; synthetic data, '
            'TensorFlow b1e174e, tf_cnn_benchmarks 9165a70, sgd',
    'pcie': 'PCI-SIG, PCI Express Base Specification 3.0: 8 GT/s a lane, 128b/130b encoding; '
            'x16 = 15.75 GB/s each way',
    'tlp': 'PCI Express 3.0 transaction layer packets: at most 256 bytes of payload (the '
           'max payload size of these servers\' root complexes) behind 24 bytes of start '
           'token and sequence number (4), 64-bit-address header (16) and LCRC (4)',
    'dgx1': 'NVIDIA, DGX-1 System Architecture (WP-08437-001): 8 P100 in a hybrid cube-mesh '
            '(GPUs 0-3 and 4-7 each fully linked by NVLink, and GPU i to i+4), the GPUs in '
            'pairs on four PCIe switches, each switch an x16 link to one of two Xeon '
            'E5-2698 v4; no GPU peer access across the two sockets',
    'p100': 'NVIDIA, Tesla P100 white paper (WP-08019-001): NVLink 1.0, four links of '
            '20 GB/s each way; HBM2, 732 GB/s',
    'nvlink': 'NVLink 1.0 packets: up to 256 bytes of data behind one 16-byte header flit',
    'k80': 'NVIDIA, Tesla K80 data sheet: two GK210 GPUs on a board behind its own PCIe '
           'switch, one PCIe 3.0 x16 link to the host; 480 GB/s of GDDR5 for the two',
    'switch': 'NVIDIA, Tesla K80 board specification (BD-07317-001) and DGX-1 System '
              'Architecture: each GPU has an x16 port of its own on its PCIe switch, so two '
              'GPUs of one switch talk through it without its x16 link to the host, which '
              'carries only what leaves or enters the pair',
    'cuda_order': 'CUDA C Programming Guide, CUDA_DEVICE_ORDER: devices of one kind are '
                  'numbered in PCI bus order, so the two GPUs behind one switch are devices '
                  '2i and 2i+1',
    'ec2': 'AWS, EC2 instance types: p2.8xlarge, 8 K80 GPUs (4 boards), 32 vCPUs of Xeon '
           'E5-2686 v4, 10 Gbit/s network; instances in a VPC use 9001-byte frames (MTU)',
    'gce': 'Google Cloud, GPUs on Compute Engine: n1-standard-32 with 8 K80 GPUs (4 boards)',
    'broadwell': 'Intel, Xeon E5-2600 v4 (Broadwell-EP): four DDR4-2400 channels, 76.8 GB/s a '
                 'socket; these hosts have two sockets',
    'nccl1': 'NVIDIA/nccl v1 README and "Fast Multi-GPU collectives with NCCL" (NVIDIA '
             'developer blog, 2016): ring collectives over the devices in the order given, '
             'each collective one CUDA kernel that both moves and reduces the data; '
             'TensorFlow b1e174e\'s contrib/nccl builds NCCL 1.x',
    'tf_nccl': 'TensorFlow contrib/nccl nccl_manager.cc (2017): each device\'s collectives run '
               'on a stream of their own, launched in turn by one thread per stream, and that '
               'stream first waits for the stream of the collective\'s input (ThenWaitFor: '
               'everything enqueued on it so far); TensorFlow\'s GPU ops are enqueued '
               'asynchronously, the host ahead of the device',
    'tcp': 'IPv4 (20 bytes) and TCP with timestamps (32 bytes) in each frame\'s MTU; '
           'Ethernet adds 14 bytes of header, 4 of FCS, 8 of preamble and 12 of gap',
    'grpc': 'This project, docs/results.md "What a transfer costs the runtime" (2026-11-28, '
            '2-core Intel Xeon VM, loopback): TensorFlow\'s gRPC runtime spends 0.128 ms of '
            'CPU a transfer (64 at once) and 1.0 ms a MB (one tensor of 4-16 MiB)',
    'tf_cnn': 'tensorflow/benchmarks tf_cnn_benchmarks (variable_mgr): parameter_server puts '
              'each variable on the parameter device holding the fewest elements so far; '
              'replicated without NCCL sums variable i\'s gradients on device i % N and '
              'copies the sum back; distributed_replicated means each worker\'s towers on its '
              'parameter device, updates the ps copies, then refreshes every tower\'s copy',
    'sgd': 'an SGD update reads the variable and the gradient and writes the variable: '
                   '3 bytes of memory traffic a byte of variables',
}

# ---- The page (source 'page'): (system, model, batch per GPU, {GPUs: images/sec}). ----
POINTS = [
    # Details for NVIDIA DGX-1 (P100): batch 64 (AlexNet 512), then "other results", batch 32.
    ('dgx1', 'inception3', 64, {1: 142, 2: 284, 4: 569, 8: 1131}),
    ('dgx1', 'resnet50', 64, {1: 219, 2: 422, 4: 852, 8: 1734}),
    ('dgx1', 'resnet152', 64, {1: 91.8, 2: 181, 4: 356, 8: 716}),
    ('dgx1', 'alexnet', 512, {1: 2987, 2: 5658, 4: 10509, 8: 17822}),
    ('dgx1', 'vgg16', 64, {1: 154, 2: 295, 4: 584, 8: 1081}),
    ('dgx1', 'inception3', 32, {1: 128, 2: 259, 4: 520, 8: 995}),
    ('dgx1', 'resnet50', 32, {1: 195, 2: 368, 4: 768, 8: 1485}),
    ('dgx1', 'resnet152', 32, {1: 82.7, 2: 160, 4: 317, 8: 632}),
    ('dgx1', 'vgg16', 32, {1: 144, 2: 281, 4: 549, 8: 820}),
    # Details for Google Compute Engine (K80).
    ('gce', 'inception3', 64, {1: 30.5, 2: 57.8, 4: 116, 8: 227}),
    ('gce', 'resnet50', 64, {1: 51.9, 2: 99.0, 4: 195, 8: 387}),
    ('gce', 'resnet152', 32, {1: 20.0, 2: 38.2, 4: 75.8, 8: 148}),
    ('gce', 'alexnet', 512, {1: 656, 2: 1209, 4: 2328, 8: 4640}),
    ('gce', 'vgg16', 32, {1: 35.4, 2: 64.8, 4: 120, 8: 234}),
    ('gce', 'inception3', 32, {1: 29.3, 2: 55.0, 4: 109, 8: 216}),
    ('gce', 'resnet50', 32, {1: 49.5, 2: 95.4, 4: 183, 8: 362}),
    # Details for Amazon EC2 (K80), one p2.8xlarge.
    ('ec2', 'inception3', 64, {1: 30.8, 2: 58.7, 4: 117, 8: 230}),
    ('ec2', 'resnet50', 64, {1: 51.5, 2: 98.0, 4: 195, 8: 384}),
    ('ec2', 'resnet152', 32, {1: 19.7, 2: 37.6, 4: 74.9, 8: 149}),
    ('ec2', 'alexnet', 512, {1: 684, 2: 1244, 4: 2479, 8: 4853}),
    ('ec2', 'vgg16', 32, {1: 36.3, 2: 69.4, 4: 141, 8: 260}),
    ('ec2', 'inception3', 32, {1: 29.9, 2: 57.5, 4: 114, 8: 216}),
    ('ec2', 'resnet50', 32, {1: 49.0, 2: 94.1, 4: 184, 8: 355}),
    # Details for Amazon EC2 Distributed (K80): 8 GPUs an instance.
    ('ec2_distributed', 'inception3', 64, {1: 29.7, 8: 229, 16: 459, 32: 902, 64: 1783}),
    ('ec2_distributed', 'resnet50', 64, {1: 52.4, 8: 378, 16: 751, 32: 1388, 64: 2744}),
    ('ec2_distributed', 'resnet152', 32, {1: 19.4, 8: 146, 16: 291, 32: 565, 64: 981}),
    ('ec2_distributed', 'inception3', 32, {1: 29.2, 8: 219, 16: 427, 32: 820, 64: 1608}),
    ('ec2_distributed', 'resnet50', 32, {1: 48.4, 8: 333, 16: 667, 32: 1180, 64: 2315}),
]

# ---- How each run was configured (source 'page'; the batch-32 runs are listed without a
# configuration of their own and are taken as configured like the model's main run). ----
# 'ps_cpu': parameter_server, local_parameter_device=cpu; 'ps_gpu': parameter_server,
# local_parameter_device=gpu; 'nccl': replicated with NCCL; 'copies_gpu': replicated without
# NCCL, local_parameter_device=gpu; 'distributed_replicated': cross_replica_sync=True.
MODES = {
    ('dgx1', 'inception3'): 'ps_cpu', ('dgx1', 'resnet50'): 'ps_cpu',
    ('dgx1', 'resnet152'): 'ps_cpu', ('dgx1', 'alexnet'): 'nccl', ('dgx1', 'vgg16'): 'nccl',
    ('gce', 'inception3'): 'ps_cpu', ('gce', 'resnet50'): 'ps_cpu',
    ('gce', 'resnet152'): 'ps_cpu', ('gce', 'alexnet'): 'ps_cpu', ('gce', 'vgg16'): 'ps_cpu',
    ('ec2', 'inception3'): 'ps_cpu', ('ec2', 'resnet50'): 'copies_gpu',
    ('ec2', 'resnet152'): 'copies_gpu', ('ec2', 'alexnet'): 'ps_gpu', ('ec2', 'vgg16'): 'ps_gpu',
    ('ec2_distributed', 'inception3'): 'distributed_replicated',
    ('ec2_distributed', 'resnet50'): 'distributed_replicated',
    ('ec2_distributed', 'resnet152'): 'distributed_replicated',
}


def distributed_ps(model, batch, instances):
    """The ps tasks of a distributed run, read literally from the page: as many as the
    instances, but at 8 instances InceptionV3 had 6, ResNet-50 at batch 32 had 4 and ResNet-152
    had 4 (so ResNet-50 at batch 64 had 8)."""
    if instances == 8:
        exceptions = {('inception3', 64): 6, ('inception3', 32): 6, ('resnet50', 32): 4,
                      ('resnet152', 32): 4}
        return exceptions.get((model, batch), instances)
    return instances


# ---- The machines and transports, each figure with its source. ----
PCIE3_X16_BYTES_S = 15.75e9                  # 'pcie': each way
PCIE_PAYLOAD = 256.0 / (256 + 24)            # 'tlp': 0.914 of the line carries data
NVLINK1_BYTES_S = 20e9                       # 'p100': one link, each way
NVLINK_PAYLOAD = 256.0 / (256 + 16)          # 'nvlink': 0.941
P100_MEMORY_BYTES_S = 732e9                  # 'p100'
K80_MEMORY_BYTES_S = 480e9 / 2               # 'k80': one GK210 of the board's two
HOST_MEMORY_BYTES_S = 2 * 76.8e9             # 'broadwell': two sockets
GPUS_PER_PCIE_SWITCH = 2                     # 'dgx1' (P100 pairs), 'k80' (a board's two GPUs)
# Each GPU's own port on its switch is x16, and so is the switch's link to the host ('switch');
# a switch's GPUs are consecutive devices ('cuda_order').
PCIE_SWITCHES = 4                            # 'dgx1', 'k80' (8 GPUs on 4 boards)
# NVLink rings: GPUs 0..n-1 in order (NCCL 1's ring, 'nccl1'). 2 and 4 GPUs are linked all
# the way round; at 8 the hops 3->4 and 7->0 have no NVLink and cross the sockets, through
# host memory over PCIe ('dgx1').
NVLINK_RING_MAX_GPUS = 4
NIC_10GBIT_BPS = 10e9                        # 'ec2'
EC2_MTU = 9001                               # 'ec2'
TCP_PAYLOAD = (EC2_MTU - 20 - 32) / (EC2_MTU + 14 + 4 + 8 + 12)  # 'tcp': 0.990
GRPC_MESSAGE_S = 0.128e-3                    # 'grpc': CPU a transfer
GRPC_BYTES_S = 1e6 / 1.0e-3                  # 'grpc': 1.0 ms of CPU a MB -> 1 GB/s, loopback
# NCCL 1's cost per collective and per ring step: no figure is published; a kernel launch and
# a PCIe or NVLink round trip are a few microseconds ('nccl1'): 5 us a collective, 1 us a hop.
NCCL_MESSAGE_S = 5e-6
NCCL_HOP_S = 1e-6
SGD_BYTES_PER_VARIABLE_BYTE = 3              # 'sgd'

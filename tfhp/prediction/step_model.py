"""A model of one training step of a cluster, from measurements and documented figures only.

Inputs: a `ComputeProfile` (each layer's forward and backward seconds and its variables: a
traced step, or a device's published throughput), the links' line rates and how their transport
carries tensors (`Transport`: the share of the line that is payload, a cost per message and per
ring step, whether it runs as kernels on the devices), the ps's update time, and the mode. No
parameter is fitted to the figures it predicts.

What it models, as tfhp (and tf_cnn_benchmarks) run a step:
  reads     a parameter-server step reads every variable from the ps tasks, at the pace of
            the slower of the worker's NIC and the busiest ps's, max(S / B, W S_k / B_ps) for
            all S bytes, a message cost each. Between the devices of one process TensorFlow
            starts every read at once and each layer's forward op waits only for its own
            variables, so the reads arrive in creation order and a layer computes as soon as
            its own are in (`Transport.overlaps_reads`); over gRPC, as measured here, the
            forward pass starts after the pull. A strategy whose workers keep copies
            (distributed_replicated) refreshes them after the update: its next forward pass
            waits for the whole pull.
  compute   forward, then backward layer by layer, last layer first (the profile).
  push      each gradient leaves when the backward pass makes it, first made first sent,
            through the worker's NIC and the ps's, shared by the W workers (rate
            min(B, K B_ps / W) per worker for K balanced ps tasks); a NIC carries both
            directions at once.
  ps load   the busiest ps task holds S_k of the S gradient bytes: S/K when balanced, or what
            the job's placement gives it (`placement.ps_gradient_bytes`).
  ps on the workers' hosts  (--colocate_ps, tf_cnn_benchmarks' distributed runs, variables on
            the GPUs of one machine) a host holding a shard sends it to the W-1 others and
            receives the rest; its own shard goes through loopback (`loopback_bps`), and a
            single machine's NIC carries nothing. The busiest link sets the pace: a member's
            own (the largest shard out, or the most it lacks in), or an `Uplink` that members
            share (two GPUs behind one PCIe switch), which carries only what leaves or enters
            its group.
  update    the ps applies the mean once every gradient is in: the profile's apply time for
            its S_k bytes, plus one accumulate per worker of the same cost. An all-reduce
            strategy applies on every device: the profile's apply time.
  all-reduce  a ring moves 2 (N-1) / N of each gradient through every member's link, in
            2 (N-1) steps (a hop cost each) after a message cost, starting when the gradient
            (its fusion bucket, --fusion_bucket_bytes) is made. A transport whose stream waits
            for the compute stream (`Transport.waits_for_compute`: TensorFlow's NCCL ops) starts
            after the backward pass, which the host has enqueued ahead of the device: its
            all-reduces run one after another after it.
  local towers  a worker with g towers first reduces their gradients over its bus: a ring, or
            (`tower_gradient_bytes`) each gradient summed on the tower that owns it and copied
            back, whose sum of g gradients runs on that device (`device_memory_bps`) between
            the backward pass's kernels.
  spares    a synchronous step aggregates R of N workers: stragglers beyond N - R are not
            waited for.
  protocol  what a step costs with nothing to move or compute (tokens, the chief's update
            loop, a session run), measured: the step of a null_scalar job of the same tasks.

The speedup and efficiency are against one tower of the same setting alone (one worker of one
device, the same links and ps tasks): the device the profile describes, so a step of N devices
is never more than N times as fast.
"""
import dataclasses
from typing import Optional, Tuple

from tfhp import modes

# PCI Express 3.0 x16, each way: 8 GT/s a lane, 128b/130b (PCI-SIG, PCIe Base Specification
# 3.0): the bus between one worker's towers unless a Cluster names another.
PCIE3_X16_BPS = 15.75e9 * 8


@dataclasses.dataclass(frozen=True)
class Transport:
    """How a link carries tensors.

    Attributes:
      efficiency: the share of the line rate that is payload (headers, framing).
      message_s: a fixed cost per tensor sent (an RPC, a kernel launch).
      hop_s: a fixed cost per step of a ring all-reduce (one hop to the next member).
      waits_for_compute: its transfers run on a stream that first waits for everything the
        compute stream holds (TensorFlow's NCCL ops wait for the stream of their inputs, and
        the host enqueues the backward pass far ahead of the device): they start after the
        backward pass. False: each starts when its gradient is made.
      overlaps_reads: a step's reads of the variables arrive in creation order and each
        layer's forward pass waits only for its own (TensorFlow's copies between the devices
        of one process); False: every read lands before the forward pass starts, as measured
        on tfhp's gRPC jobs here (resnet20, 2-4 workers: 8-17% slower than overlapped reads
        would make them).
    """
    efficiency: float = 1.0
    message_s: float = 0.0
    hop_s: float = 0.0
    waits_for_compute: bool = False
    overlaps_reads: bool = False


@dataclasses.dataclass(frozen=True)
class Uplink:
    """A link that consecutive members of one level share towards the rest (two GPUs behind
    one PCIe switch, whose link to the host is x16 like each GPU's own port).

    Attributes:
      members: how many consecutive workers (or towers) sit behind it.
      bps: its line rate, bits per second each way (its transport: the level's).
    """
    members: int
    bps: float


@dataclasses.dataclass(frozen=True)
class Cluster:
    """The machines and links of a job.

    Attributes:
      num_workers: W, worker tasks (machines).
      towers_per_worker: g, towers (devices) per worker, reduced over the worker's bus first.
      num_ps: K, ps tasks (0 for all-reduce modes).
      nic_bps: each worker's NIC, bits per second of line rate, each direction.
      ps_nic_bps: each ps task's NIC (None: nic_bps).
      bus_bps: within one worker, between its towers (None: PCI Express 3.0 x16).
      ps_on_workers: the ps tasks run on the worker machines and share their NICs
        (`tfhp.launch --colocate_ps`, tf_cnn_benchmarks' distributed runs).
      protocol_s: the measured step of the same job with no variables and no compute
        (`--model=null_scalar`), added to every step.
      ps_gradient_bytes: the gradient bytes each ps task holds
        (`placement.ps_gradient_bytes`); None: S/K each.
      nic_transport: how the NICs carry tensors (default: the rates are payload already).
      bus_transport: how the bus carries tensors.
      loopback_bps: a worker's own host's ps reached through loopback at this rate (bits per
        second; None: at no cost).
      tower_gradient_bytes: the gradient bytes each tower owns when the towers' gradients are
        summed on their owners and copied back (replicated without NCCL); None: a ring.
      device_memory_bps: a device's memory rate (bits per second), for the sums run on it;
        None: they cost nothing.
      nic_uplink: an `Uplink` the workers' links share (None: each goes straight to the rest).
      bus_uplink: an `Uplink` the towers' bus links share (None: likewise).
    """
    num_workers: int
    towers_per_worker: int = 1
    num_ps: int = 1
    nic_bps: float = 1e9
    ps_nic_bps: Optional[float] = None
    bus_bps: Optional[float] = None
    ps_on_workers: bool = False
    protocol_s: float = 0.0
    ps_gradient_bytes: Optional[Tuple[int, ...]] = None
    nic_transport: Transport = Transport()
    bus_transport: Transport = Transport()
    loopback_bps: Optional[float] = None
    tower_gradient_bytes: Optional[Tuple[int, ...]] = None
    device_memory_bps: Optional[float] = None
    nic_uplink: Optional[Uplink] = None
    bus_uplink: Optional[Uplink] = None


@dataclasses.dataclass(frozen=True)
class Prediction:
    """One step's time and its parts (seconds), and the figures they give."""
    step_s: float
    compute_s: float
    pull_s: float
    push_tail_s: float
    update_s: float
    images_per_sec: float
    speedup: float
    efficiency: float


def _fifo_finish(ready, sizes, rate, fixed=None):
    """When the last of `sizes` bytes, each ready at `ready[i]`, has left a link of `rate` bytes
    per second serving them in order of readiness, each costing `fixed[i]` seconds more."""
    clock = 0.0
    for t, size, cost in sorted(zip(ready, sizes, fixed or [0.0] * len(sizes))):
        clock = max(clock, t) + cost + size / rate
    return clock


def _tail(ready, sizes, rate, done, fixed=None):
    """How long after `done` a link of `rate` bytes/s still moves `sizes` (made at `ready`)."""
    return max(_fifo_finish(ready, sizes, rate, fixed) - done, 0.0)


def _ring(sizes, n):
    """What a ring all-reduce of n members puts through each member's link: 2 (n-1)/n."""
    return [2.0 * (n - 1) / n * s for s in sizes]


def _ring_s(size, n, rate, transport, tensors=1):
    """Seconds of the ring all-reduces of `tensors` tensors of `size` bytes in all among n
    members on links of `rate` bytes/s: a message cost and 2 (n-1) hops each."""
    return (tensors * (transport.message_s + 2 * (n - 1) * transport.hop_s) +
            2.0 * (n - 1) / n * size / rate)


def _forward_end(profile, read_rate, message_s):
    """When the forward pass ends if each layer waits for its variables, read in creation
    order at `read_rate` bytes/s (None: read before the step, nothing to wait for)."""
    t = arrived = 0.0
    for layer in profile.layers:
        if read_rate:
            arrived += layer.gradient_bytes / read_rate + message_s * _messages(layer)
            t = max(t, arrived)
        t += layer.forward_s
    return t


def _messages(layer):
    return sum(1 for v in layer.variables if v.trainable)


def _gradient_times(profile, start):
    """(time each layer's gradients are made, their bytes, their tensors), backward order,
    from `start` (the end of the forward pass)."""
    t = start
    ready, sizes, counts = [], [], []
    for layer in reversed(profile.layers):
        t += layer.backward_s
        if layer.gradient_bytes:
            ready.append(t)
            sizes.append(layer.gradient_bytes)
            counts.append(_messages(layer))
    return ready, sizes, counts


def _buckets(ready, sizes, bucket_bytes):
    """(ready, sizes) of fusion buckets over gradients made at `ready` with `sizes` bytes, in
    backward order (as `tfhp.ops.packing.buckets` cuts them, layer by layer here): consecutive
    gradients until the next would overflow bucket_bytes, one larger than that alone; a bucket
    leaves when its last gradient is made."""
    out_ready, out_sizes = [], []
    for t, size in zip(ready, sizes):
        if out_sizes and out_sizes[-1] + size <= bucket_bytes and size <= bucket_bytes:
            out_ready[-1], out_sizes[-1] = t, out_sizes[-1] + size
        else:
            out_ready.append(t)
            out_sizes.append(size)
    return out_ready, out_sizes


def _exchange_rate(rate, held, members, uplink=None):
    """Bytes/s of each member's share of an exchange in which member i owns held[i] bytes
    (members past len(held) own none), sends them to the other members - 1 and receives what
    it lacks: the busiest link sets the pace, a member's own at `rate` bytes/s or an `uplink`
    (its rate in bytes/s) that carries what leaves or enters its group of members."""
    held = list(held) + [0.0] * (members - len(held))
    total = float(sum(held))
    time = max(max((members - 1) * h, total - h) for h in held) / rate
    if uplink:
        for start in range(0, members, uplink.members):
            group = held[start:start + uplink.members]
            out = sum(group) * (members - len(group))
            into = len(group) * (total - sum(group))
            time = max(time, max(out, into) / uplink.bps)
    return total / time if time else None


def _uplink(uplink, transport):
    """An Uplink's rate in payload bytes/s (None stays None)."""
    return uplink and Uplink(uplink.members, uplink.bps / 8.0 * transport.efficiency)


def _hosts(shards, members):
    """Each of `members` hosts' bytes when shard k runs on host k % members."""
    held = [0.0] * members
    for k, size in enumerate(shards):
        held[k % members] += size
    return held


def _local_reduction(ready, sizes, counts, cluster, compute_end, bus):
    """Seconds that the reduction of one worker's g towers adds to its step after the backward
    pass (which ends at compute_end), its gradients made at `ready`."""
    g, transport = cluster.towers_per_worker, cluster.bus_transport
    if cluster.tower_gradient_bytes:
        owned = max(cluster.tower_gradient_bytes)
        rate = _exchange_rate(bus, cluster.tower_gradient_bytes, g,
                              _uplink(cluster.bus_uplink, transport))
        # The owner sums g gradients of its bytes on its own device: read g, write one.
        summing = ((g + 1) * owned * 8 / cluster.device_memory_bps
                   if cluster.device_memory_bps else 0.0)
        return _tail(ready, sizes, rate, compute_end,
                     [transport.message_s * n for n in counts]) + summing
    durations = [_ring_s(s, g, bus, transport, n) for s, n in zip(sizes, counts)]
    if transport.waits_for_compute:
        # The first waits for the backward pass; the rest follow one after another.
        return sum(durations)
    clock = 0.0
    for t, duration in sorted(zip(ready, durations)):
        clock = max(clock, t) + duration
    return max(clock - compute_end, 0.0)


def _step(profile, cluster, strategy, synchronous, apply_s, fusion_bucket_bytes):
    """(step, pull, push tail, update) seconds of one step, stragglers and protocol aside."""
    W, g = cluster.num_workers, cluster.towers_per_worker
    S = float(profile.gradient_bytes)
    nic = cluster.nic_transport
    B = cluster.nic_bps / 8.0 * nic.efficiency
    bus = (cluster.bus_bps or PCIE3_X16_BPS) / 8.0 * cluster.bus_transport.efficiency
    all_reduce = strategy.worker_all_reduce or not strategy.uses_ps
    pull = rate = None
    if not all_reduce:
        # The busiest ps task's share of the gradient bytes: every transfer and update waits
        # on it.
        share = (max(cluster.ps_gradient_bytes) / S if cluster.ps_gradient_bytes and S
                 else 1.0 / max(cluster.num_ps, 1))
        S_k = share * S
        uplink = _uplink(cluster.nic_uplink, nic)
        if cluster.ps_on_workers:
            shards = cluster.ps_gradient_bytes or [S / cluster.num_ps] * cluster.num_ps
            rate = _exchange_rate(B, _hosts(shards, W), W, uplink) if W > 1 else None
            if cluster.loopback_bps:
                # A worker's own host's shard goes through loopback, beside the NIC.
                own = cluster.loopback_bps / 8.0 * S / S_k
                rate = min(rate, own) if rate else own
        else:
            ps_b = (cluster.ps_nic_bps or cluster.nic_bps) / 8.0 * nic.efficiency
            # Workers behind one uplink share it on their way to the ps.
            reach = min(B, uplink.bps / min(uplink.members, W)) if uplink else B
            rate = min(reach, ps_b / (W * share))
            busiest_nic = W * S_k / ps_b
        pull = (S / rate + nic.message_s * sum(_messages(l) for l in profile.layers)
                if rate else 0.0)
    # Reads wait for the update where workers keep copies; else, where the transport lets it,
    # each layer waits for its own.
    overlapped = pull is not None and nic.overlaps_reads and not strategy.worker_copies
    forward_end = _forward_end(profile, rate if overlapped else None, nic.message_s)
    ready, sizes, counts = _gradient_times(profile, forward_end)
    compute_end = forward_end + profile.backward_s
    if fusion_bucket_bytes and (strategy.tower_all_reduce or strategy.worker_all_reduce):
        ready, sizes = _buckets(ready, sizes, fusion_bucket_bytes)
        counts = [1] * len(sizes)  # a bucket is one tensor
    local = (_local_reduction(ready, sizes, counts, cluster, compute_end, bus) if g > 1
             else 0.0)
    before = 0.0 if overlapped or pull is None else pull
    if all_reduce:
        # Across workers, a ring over their NICs (one machine: its towers' reduction alone);
        # then every device applies the update.
        push_tail = 0.0
        if W > 1:
            clock = 0.0
            for t, size, n in sorted(zip(ready, sizes, counts)):
                clock = max(clock, t) + _ring_s(size, W, B, nic, n)
            push_tail = max(clock - compute_end, 0.0)
        update = apply_s
        return compute_end + local + push_tail + update, 0.0, push_tail, update
    update = apply_s * share * (1 + (W if synchronous else 1))
    push_tail = (_tail([t + local for t in ready], sizes, rate, compute_end + local,
                       [nic.message_s * n for n in counts]) if rate else 0.0)
    step = before + compute_end + local + push_tail + update
    if not synchronous and not cluster.ps_on_workers:
        # Each worker steps alone; together they cannot move more than the ps NICs carry.
        step = max(step, busiest_nic)
    return step, pull, push_tail, update


def predict(profile, cluster, variable_update='parameter_server', synchronous=True,
            apply_s=0.0, stragglers=(), replicas_to_aggregate=None, fusion_bucket_bytes=0):
    """The Prediction of one step.

    Args:
      profile: a `tfhp.emulation.profile.ComputeProfile` (one tower's batch).
      cluster: a Cluster.
      variable_update: a strategy of `tfhp.modes` (the ps ones, collective_all_reduce, or
        replicated for one machine's towers).
      synchronous: False: asynchronous ps workers (each steps alone; the ps NICs bound them).
      apply_s: the time to apply one update to all S bytes (a ps's, split over K ps tasks; an
        all-reduce strategy's, on each device).
      stragglers: extra seconds of compute of each slow worker (e.g. (0.5,) for one).
      replicas_to_aggregate: R of a synchronous ps step (None: every worker).
      fusion_bucket_bytes: all-reduce strategies' --fusion_bucket_bytes (0: each gradient
        all-reduced on its own, as it is made).
    Returns:
      A Prediction; speedup and efficiency are against one tower of the same setting alone.
    """
    strategy = modes.strategy(variable_update)
    W, g = cluster.num_workers, cluster.towers_per_worker
    step, pull, push_tail, update = _step(profile, cluster, strategy, synchronous, apply_s,
                                          fusion_bucket_bytes)
    step += cluster.protocol_s
    slow = sorted(stragglers, reverse=True)
    spare = W - (replicas_to_aggregate or W)
    if synchronous and len(slow) > spare:
        step += slow[spare]
    alone = _step(profile, dataclasses.replace(cluster, num_workers=1, towers_per_worker=1),
                  strategy, synchronous, apply_s, fusion_bucket_bytes)[0] + cluster.protocol_s
    images = W * g * profile.batch_size / step
    speedup = images / (profile.batch_size / alone)
    return Prediction(step, profile.compute_s, pull or 0.0, push_tail, update, images, speedup,
                      speedup / (W * g))

"""A model of one training step of a cluster, from measurements only.

Inputs: a `ComputeProfile` (each layer's forward and backward seconds and gradient bytes: a
traced step, or a device's published throughput), the NICs' rates (the link check measures how
close the emulated ones come), the ps's update time (the profile's measured apply time), and the
mode. No parameter is fitted to the figures it predicts.

What it models, as tfhp (and tf_cnn_benchmarks) run a step; no latency (the emulated links have
none, and the published runs' are small against their step):
  pull      a parameter-server step starts by reading every variable: all transfers at once, so
            each worker's weights arrive after max(S / B, W S_k / B_ps), the worker's and the
            busiest ps's NIC time (a NIC carries both directions at once: pull and push do not
            share it).
  compute   forward, then backward layer by layer, last layer first (the profile).
  push      each gradient leaves when the backward pass makes it, first made first sent,
            through the worker's NIC and the ps's, shared by the W workers (rate
            min(B, K B_ps / W) per worker for K balanced ps tasks).
  ps load   the busiest ps task holds S_k of the S gradient bytes: S/K when balanced, or what
            tfhp's greedy placement gives it (`placement.ps_gradient_bytes`); pull, push and
            update go at its pace.
  update    the ps applies the mean once every gradient is in: the profile's apply time for
            its S_k bytes, plus one accumulate per worker of the same cost.
  all-reduce  a ring moves 2 (N-1) / N of each gradient through every NIC (or, within one
            machine, over its bus), starting when the gradient is made; with fusion buckets
            (--fusion_bucket_bytes), when its bucket's last gradient is made (a bucket of
            every gradient, the single pack, after the backward pass).
  local towers  a worker with g towers (GPUs) first reduces its towers' gradients over its bus.
  spares    a synchronous step aggregates R of N workers: stragglers beyond N - R are not
            waited for.
  protocol  what a step costs with nothing to move or compute (tokens, the chief's update
            loop, a session run), measured: the step of a null_scalar job of the same tasks.
"""
import dataclasses
from typing import Optional, Tuple

from tfhp import modes


@dataclasses.dataclass(frozen=True)
class Cluster:
    """The machines and links of a job.

    Attributes:
      num_workers: W, worker tasks (machines).
      towers_per_worker: g, towers (devices) per worker, reduced over the worker's bus first.
      num_ps: K, ps tasks (0 for all-reduce modes).
      nic_bps: each worker's NIC, bits per second, each direction.
      ps_nic_bps: each ps task's NIC (None: nic_bps).
      bus_bps: within one worker, between its towers (None: no bus, one tower).
      ps_on_workers: the ps tasks run on the worker machines and share their NICs
        (tf_cnn_benchmarks' distributed runs).
      protocol_s: the measured step of the same job with no variables and no compute
        (`--model=null_scalar`), added to every step.
      ps_gradient_bytes: the gradient bytes each ps task holds
        (`placement.ps_gradient_bytes`); None: S/K each.
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


def _fifo_finish(ready, sizes, rate):
    """When the last of `sizes` bytes, each ready at `ready[i]`, has left a link of `rate` bytes
    per second serving them in order of readiness."""
    clock = 0.0
    for t, size in sorted(zip(ready, sizes)):
        clock = max(clock, t) + size / rate
    return clock


def _tail(ready, sizes, rate, done):
    """How long after `done` a link of `rate` bytes/s still moves `sizes` (made at `ready`)."""
    return max(_fifo_finish(ready, sizes, rate) - done, 0.0)


def _ring(sizes, n):
    """What a ring all-reduce of n members puts through each member's link: 2 (n-1)/n."""
    return [2.0 * (n - 1) / n * s for s in sizes]


def _gradient_times(profile, start):
    """(time each layer's gradients are made, their bytes), backward order, from `start`."""
    t = start + profile.forward_s
    ready, sizes = [], []
    for layer in reversed(profile.layers):
        t += layer.backward_s
        if layer.gradient_bytes:
            ready.append(t)
            sizes.append(layer.gradient_bytes)
    return ready, sizes


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


def predict(profile, cluster, variable_update='parameter_server', synchronous=True,
            apply_s=0.0, stragglers=(), replicas_to_aggregate=None, fusion_bucket_bytes=0):
    """The Prediction of one step.

    Args:
      profile: a `tfhp.emulation.profile.ComputeProfile` (one tower's batch).
      cluster: a Cluster.
      variable_update: a strategy of `tfhp.modes` (the ps ones, collective_all_reduce, or
        replicated for one machine's towers).
      synchronous: False: asynchronous ps workers (each steps alone; the ps NICs bound them).
      apply_s: the ps's time to apply one update to all S bytes (split over K ps tasks).
      stragglers: extra seconds of compute of each slow worker (e.g. (0.5,) for one).
      replicas_to_aggregate: R of a synchronous ps step (None: every worker).
      fusion_bucket_bytes: all-reduce strategies' --fusion_bucket_bytes (0: each gradient
        all-reduced on its own, as it is made).
    Returns:
      A Prediction; speedup and efficiency are against one tower alone (compute + apply).
    """
    strategy = modes.strategy(variable_update)
    W, g = cluster.num_workers, cluster.towers_per_worker
    S = float(profile.gradient_bytes)
    B = cluster.nic_bps / 8.0
    compute = profile.compute_s
    ready, sizes = _gradient_times(profile, 0.0)
    if fusion_bucket_bytes and (strategy.tower_all_reduce or strategy.worker_all_reduce):
        ready, sizes = _buckets(ready, sizes, fusion_bucket_bytes)
    # Local towers: their gradients meet over the bus (a ring among g towers) before leaving.
    local = 0.0
    if g > 1:
        local = _tail(ready, _ring(sizes, g), (cluster.bus_bps or cluster.nic_bps) / 8.0,
                      compute)
    pull = push_tail = update = 0.0
    if strategy.worker_all_reduce or not strategy.uses_ps:
        # Across workers, a ring over their NICs (one machine: its towers' ring alone).
        if W > 1:
            push_tail = _tail(ready, _ring(sizes, W), B, compute)
        step = compute + local + push_tail
    else:
        # The busiest ps task's share of the gradient bytes: every transfer and update waits
        # on it.
        share = (max(cluster.ps_gradient_bytes) / S if cluster.ps_gradient_bytes and S
                 else 1.0 / max(cluster.num_ps, 1))
        S_k = share * S
        ps_b = (cluster.ps_nic_bps or cluster.nic_bps) / 8.0
        if cluster.ps_on_workers:
            # A machine holding a ps shard sends its other shards' part out while the other
            # W-1 machines send it theirs for its shard (pushes; pulls the other way).
            pull = max(S - S_k, (W - 1) * S_k) / B
            rate = S / pull
        else:
            pull = max(S / B, W * S_k / ps_b)
            rate = min(B, ps_b / (W * share))
        update = apply_s * share * (1 + (W if synchronous else 1))
        push_tail = _tail([t + local for t in ready], sizes, rate, compute + local)
        step = pull + compute + local + push_tail + update
        if not synchronous:
            # Each worker steps alone; together they cannot move more than the ps NICs carry.
            step = max(step, W * S_k / ps_b)
    step += cluster.protocol_s
    slow = sorted(stragglers, reverse=True)
    spare = W - (replicas_to_aggregate or W)
    if synchronous and len(slow) > spare:
        step += slow[spare]
    images = W * g * profile.batch_size / step
    alone = profile.batch_size / (compute + apply_s)
    return Prediction(step, compute, pull, push_tail, update, images, images / alone,
                      images / alone / (W * g))

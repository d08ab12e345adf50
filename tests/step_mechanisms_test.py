"""The step model's mechanisms, each on a hand-made profile with the numbers worked out: the
transport's payload share, its costs per message and per hop, an all-reduce that takes turns
with the backward pass, reads overlapped with the forward pass, variables spread over the
devices, gradients summed on their owners, one machine of a distributed job, and the baseline
that keeps every efficiency at or under 1."""
import dataclasses
import itertools

import pytest

from tfhp.emulation import profile as profile_lib
from tfhp.prediction import placement
from tfhp.prediction import step_model

MB = 1e6


def _profile(layer_bytes, forward_s=0.1, backward_s=0.1, apply_s=0.0):
    """Layers of float32 vectors of `layer_bytes` each, with these per-layer times."""
    layers = tuple(profile_lib.Layer('l%d' % i, (profile_lib.Variable(
        'l%d/weights' % i, (int(b) // 4,)),), forward_s, backward_s)
                   for i, b in enumerate(layer_bytes))
    return profile_lib.ComputeProfile('m', 32, layers, 'test', apply_s)


TWO = _profile([10 * MB, 10 * MB])  # compute 0.4 s; gradients made at 0.3 s and 0.4 s


def test_the_transports_payload_share_slows_every_transfer():
    # 4 workers, 1 ps at 800 Mbit/s carrying half payload: 50 MB/s, 12.5 MB/s a worker. The
    # pull doubles (1.6 s, not 0.8); the two 10 MB gradients made at 0.3 s and 0.4 s leave by
    # 0.3 + 0.8 + 0.8 = 1.9 s, 1.5 s after compute (0.7 s at the full rate).
    half = step_model.predict(TWO, step_model.Cluster(
        num_workers=4, nic_bps=800e6, nic_transport=step_model.Transport(efficiency=0.5)))
    assert (half.pull_s, half.push_tail_s) == pytest.approx((1.6, 1.5))


def test_a_ring_pays_a_cost_per_message_and_per_hop():
    # 4 workers at 100 MB/s: each 10 MB gradient's ring moves 15 MB (0.15 s) after 10 ms for
    # the message and 6 hops of 1 ms: 0.166 s. From 0.3 s: ends at 0.466 and 0.632 s.
    cluster = step_model.Cluster(num_workers=4, num_ps=0, nic_bps=800e6,
                                 nic_transport=step_model.Transport(message_s=0.01, hop_s=0.001))
    p = step_model.predict(TWO, cluster, 'collective_all_reduce')
    assert p.step_s == pytest.approx(0.632)
    free = step_model.predict(TWO, step_model.Cluster(num_workers=4, num_ps=0, nic_bps=800e6),
                              'collective_all_reduce')
    assert free.step_s == pytest.approx(0.6)


def test_an_all_reduce_whose_stream_waits_for_compute_starts_after_the_backward_pass():
    # 4 towers on a 100 MB/s bus: 0.15 s a gradient. Started as each gradient is made, the
    # first all-reduce hides under the last layer's backward pass (0.6 s); on a stream that
    # waits for the compute stream (NCCL) both run after it (0.4 + 0.3 s).
    def step(waits):
        cluster = step_model.Cluster(num_workers=1, towers_per_worker=4, num_ps=0,
                                     bus_bps=800e6,
                                     bus_transport=step_model.Transport(waits_for_compute=waits))
        return step_model.predict(TWO, cluster, 'replicated').step_s
    assert step(False) == pytest.approx(0.6)
    assert step(True) == pytest.approx(0.7)


def test_reads_overlapped_with_the_forward_pass():
    # 4 workers, 1 ps at 100 MB/s: 25 MB/s a worker. In creation order the first layer's
    # 10 MB is in at 0.4 s and computes to 0.5 s, the second's at 0.8 s: the forward pass ends
    # at 0.9 s, not 1.0 s, and the step at 0.9 + 0.2 + 0.7 (push tail) + 0.25 (update).
    cluster = step_model.Cluster(num_workers=4, nic_bps=800e6,
                                 nic_transport=step_model.Transport(overlaps_reads=True))
    p = step_model.predict(TWO, cluster, apply_s=0.05)
    assert p.pull_s == pytest.approx(0.8)
    assert p.step_s == pytest.approx(0.9 + 0.2 + 0.7 + 0.25)
    # Workers that keep copies refresh them after the update: the pull comes first.
    kept = step_model.predict(TWO, cluster, 'distributed_replicated', apply_s=0.05)
    assert kept.step_s == pytest.approx(0.8 + 0.4 + 0.7 + 0.25)


def test_variables_spread_over_the_devices_load_their_owners_links():
    # 4 GPUs, each layer's 10 MB on one of them: an owner sends its 10 MB to 3 others (30 MB)
    # while each GPU receives at most 20 MB, so each reads its 20 MB at 100 * 20/30 MB/s
    # (0.3 s): the first layer's by 0.15 s, the second's by 0.3 s, the forward pass ends at
    # 0.4 s and the gradients (made at 0.5 and 0.6 s) leave by 0.8 s.
    cluster = step_model.Cluster(num_workers=4, num_ps=4, nic_bps=800e6, ps_on_workers=True,
                                 ps_gradient_bytes=(10 * MB, 10 * MB, 0, 0),
                                 nic_transport=step_model.Transport(overlaps_reads=True))
    p = step_model.predict(TWO, cluster)
    assert (p.pull_s, p.step_s) == pytest.approx((0.3, 0.8))
    # One GPU alone holds its own variables: 0.4 s.
    assert p.speedup == pytest.approx(4 * 0.4 / 0.8)


def test_gpus_behind_one_switch_share_only_its_link_to_the_rest():
    # 4 GPUs in pairs behind two switches, one GPU holding all 20 MB: its own port sends 60 MB
    # (0.6 s at 100 MB/s), its switch's link 40 MB (to the other pair), the other switch's
    # 40 MB in. At the same rate the owner's port sets the pace: 0.6 s, where halving every
    # GPU's port for its shared switch would take 1.2 s. A slower switch link sets it: 0.8 s.
    def pull(port_bps, uplink_bps=None):
        cluster = step_model.Cluster(
            num_workers=4, num_ps=4, nic_bps=port_bps, ps_on_workers=True,
            ps_gradient_bytes=(20 * MB, 0, 0, 0),
            nic_uplink=uplink_bps and step_model.Uplink(members=2, bps=uplink_bps))
        return step_model.predict(TWO, cluster).pull_s
    assert pull(800e6, 800e6) == pytest.approx(0.6)
    assert pull(400e6) == pytest.approx(1.2)
    assert pull(800e6, 400e6) == pytest.approx(0.8)


def test_gradients_summed_on_their_owners_and_the_sum_on_the_device():
    # Replicated without NCCL: each 10 MB gradient summed on its owner among 4 towers: the bus
    # moves 20 MB a tower at 100 * 20/30 MB/s (ends at 0.6 s from 0.3 s: 0.2 s after compute),
    # and the owner reads 4 gradients and writes one (50 MB) at 1 GB/s: 0.05 s.
    cluster = step_model.Cluster(num_workers=1, towers_per_worker=4, num_ps=0, bus_bps=800e6,
                                 tower_gradient_bytes=(10 * MB, 10 * MB, 0, 0),
                                 device_memory_bps=8e9)
    assert step_model.predict(TWO, cluster, 'replicated').step_s == pytest.approx(0.65)
    profile = _profile([4, 8, 12, 16, 20])
    assert placement.round_robin_gradient_bytes(profile, 2) == [4 + 12 + 20, 8 + 16]


def test_one_machine_of_a_distributed_job_predicts():
    # 8 towers and its ps on one host (tf_cnn_benchmarks' 8-GPU distributed_replicated row):
    # nothing crosses a NIC. The towers' ring moves 17.5 MB a gradient on a 100 MB/s bus
    # (0.3 -> 0.475 -> 0.65 s: 0.25 s after compute), and the ps applies once and accumulates
    # once (0.1 s).
    cluster = step_model.Cluster(num_workers=1, towers_per_worker=8, num_ps=1, bus_bps=800e6,
                                 ps_on_workers=True)
    p = step_model.predict(TWO, cluster, 'distributed_replicated', apply_s=0.05)
    assert (p.pull_s, p.step_s) == pytest.approx((0.0, 0.75))
    # Through loopback at 100 MB/s: the 20 MB pull (0.2 s) and the push of what the ring
    # leaves at 0.55 and 0.65 s (0.1 s after the ring ends).
    looped = step_model.predict(TWO, dataclasses.replace(cluster, loopback_bps=800e6),
                                'distributed_replicated', apply_s=0.05)
    assert (looped.pull_s, looped.step_s) == pytest.approx((0.2, 1.05))


def test_no_efficiency_above_one_and_no_speedup_above_the_devices():
    # The case a user met: 16 machines of 8 devices on 25 Gbit/s NICs, collective all-reduce,
    # a profile with an update of its own: the baseline is one tower of the same setting,
    # update included, so the efficiency stays under 1 (it was 1.02).
    profile = _profile([25 * MB] * 4, 0.02, 0.04, apply_s=0.004)
    p = step_model.predict(profile, step_model.Cluster(
        num_workers=16, towers_per_worker=8, num_ps=0, nic_bps=25e9), 'collective_all_reduce',
                           apply_s=profile.apply_s)
    assert p.efficiency < 1.0 and p.speedup < 128
    for update, w, g, k, colocated, bucket in itertools.product(
            ('parameter_server', 'distributed_replicated', 'collective_all_reduce'),
            (1, 2, 16), (1, 8), (1, 2), (False, True), (0, 60 * MB)):
        if colocated and k > w:
            continue
        cluster = step_model.Cluster(num_workers=w, towers_per_worker=g, num_ps=k,
                                     nic_bps=25e9, ps_on_workers=colocated)
        p = step_model.predict(profile, cluster, update, apply_s=profile.apply_s,
                               fusion_bucket_bytes=bucket)
        assert p.efficiency <= 1.0 + 1e-12 and p.speedup <= w * g + 1e-9, (update, w, g, k)

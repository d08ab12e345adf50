"""All-gather: every device's payload copied to every device, for payloads that cannot be summed.

A payload is a tuple of tensors (e.g. a compressed gradient's packed signs and scale, or its
values and indices). Each function takes one payload per device, each already on its device,
and returns `gathered[d][s]`: sender s's payload on device d, `gathered[d][d]` being d's own.
Nothing is added on the way, only copied (tf.identity under the receiver's device scope, the
copy TensorFlow turns into a send and a receive between devices), so every device holds the
same bits of every payload. Three topologies, each the shape of an all-reduce algorithm
(`tfhp.ops.allreduce.AllReduce.all_gather` says which):

- `ring`: in step s (0..N-2) device i forwards to device i+1 the payload it got in step s-1
  (its own first). Each device sends and receives N-1 payloads in N-1 steps, each link
  carrying one payload per step.
- `star`: every payload goes to one hub device, which sends each device the N-1 payloads it
  lacks (the copy-to-device all-reduce's shape: the hub carries all the traffic).
- `hierarchical`: within each group of devices the members' payloads go to the group's first
  device (its leader); the leaders all-gather their groups' bundles (with `ring`, or another
  of these); each leader then sends every payload to its members.
"""
import tensorflow.compat.v1 as tf


def _copy(payload, device):
    """`payload`'s tensors copied to `device`."""
    with tf.device(device):
        return tuple(tf.identity(t) for t in payload)


def _check(payloads, devices):
    if not payloads or len(payloads) != len(devices):
        raise ValueError('all-gather needs one payload per device; got %d payloads for %d '
                         'devices' % (len(payloads), len(devices)))
    return [tuple(p) for p in payloads]


def ring(payloads, devices):
    """Every payload on every device, forwarded around the ring `devices` (module docstring).

    Args:
      payloads: one tuple of tensors per device, each on its device.
      devices: the device of each payload, in ring order.
    Returns:
      gathered[d][s]: payload s on device d.
    """
    payloads = _check(payloads, devices)
    n = len(devices)
    gathered = [[None] * n for _ in range(n)]
    for i, payload in enumerate(payloads):
        gathered[i][i] = payload
    with tf.name_scope('ring_all_gather'):
        for step in range(n - 1):
            for i in range(n):
                sender, dst = (i - step) % n, (i + 1) % n
                gathered[dst][sender] = _copy(gathered[i][sender], devices[dst])
    return gathered


def star(payloads, devices, hub):
    """Every payload on every device, through `hub` (module docstring).

    Args:
      payloads, devices: as for `ring`.
      hub: the device every payload passes through (one of `devices`, or another, e.g. the
        host CPU).
    Returns:
      gathered[d][s]: payload s on device d.
    """
    payloads = _check(payloads, devices)
    with tf.name_scope('star_all_gather'):
        at_hub = [p if d == hub else _copy(p, hub) for p, d in zip(payloads, devices)]
        return [[payloads[s] if s == d else at_hub[s] if device == hub else
                 _copy(at_hub[s], device) for s in range(len(devices))]
                for d, device in enumerate(devices)]


def hierarchical(payloads, devices, groups, outer=ring):
    """Every payload on every device: to each group's leader, among the leaders, back down.

    Args:
      payloads, devices: as for `ring`.
      groups: lists of indices into `devices`, covering each once; a group's first device is
        its leader.
      outer: all-gather(bundles, leader_devices) -> gathered among the leaders (`ring` by
        default; a bundle is a group's payloads, concatenated).
    Returns:
      gathered[d][s]: payload s on device d.
    """
    payloads = _check(payloads, devices)
    if sorted(i for g in groups for i in g) != list(range(len(devices))):
        raise ValueError('all-gather groups %s must cover the %d devices once each'
                         % (groups, len(devices)))
    leaders = [g[0] for g in groups]
    with tf.name_scope('hierarchical_all_gather'):
        # 1. Each group's payloads, gathered at its leader and concatenated into one bundle.
        bundles = []
        for group in groups:
            leader = devices[group[0]]
            bundles.append(sum((payloads[i] if i == group[0] else _copy(payloads[i], leader)
                                for i in group), ()))
        # 2. Every bundle on every leader.
        at_leaders = outer(bundles, [devices[i] for i in leaders])
        # 3. Bundles cut back into payloads; every member gets each payload from its leader.
        gathered = [[None] * len(devices) for _ in devices]
        for g, group in enumerate(groups):
            at_leader = {}
            for h, other in enumerate(groups):
                start = 0
                for sender in other:
                    size = len(payloads[sender])
                    at_leader[sender] = tuple(at_leaders[g][h][start:start + size])
                    start += size
            for member in group:
                for sender, payload in at_leader.items():
                    gathered[member][sender] = (
                        payloads[member] if sender == member else
                        payload if member == group[0] else _copy(payload, devices[member]))
        return gathered

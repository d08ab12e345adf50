"""What a step's traffic costs on links of a given rate, and the cluster mode of tfhp.diagnose.

Bytes per synchronous step each NIC carries, for W workers of a model of S bytes of float32
variables (`expected_traffic`; g = the gradients' share of float32, 0.5 for 16-bit transfer):
  parameter_server, distributed_replicated  ps task k, holding S_k of the variables: sends
      W * S_k (every worker reads them), receives W * g * S_k (every worker's gradient);
      a worker receives S and sends g * S. Balanced over K ps tasks, S_k = S / K.
  collective_all_reduce  a ring: every worker sends and receives 2 (N - 1) / N * g * S.
A link of B bits/s needs at least bytes * 8 / B for them (`transfer_ms`): per direction, the
largest over the NICs is a lower bound of the step (`bound_ms`; the ps NIC's W * S / (K * B)).
A synchronous parameter-server step reads the variables and then sends the gradients, and the
workers share the ps link fairly, so the two directions mostly take turns: about the sum of
the two (`turns_ms`), an estimate, not a bound (a worker whose read ends early sends its
gradient while the others still read).

The cluster diagnosis (`diagnose_cluster`, run by `python -m tfhp.diagnose --num_worker_tasks=N
--link_bandwidth=RATE`), T = a step time:
  link exposure           1 - T(loopback) / T(shaped links): the share of the step the links'
                          rate costs (the same job, every task on loopback);
  communication exposure  1 - T(one process) / T(shaped links): the share beyond one worker's
                          compute alone (its configuration in one process, no cluster);
next to the least time the busiest NIC's measured bytes take at its rate and the ps NIC's
W * S / (K * B). Pure arithmetic: no TensorFlow.
"""
import dataclasses
from typing import Dict, Optional

from tfhp import modes

# An exposure below this is noise on a shared machine, not a bottleneck (as tfhp.diagnose's).
SIGNIFICANT = 0.10
# The links' bound explains the link time when it is at least this share of it.
EXPLAINS = 0.7


def transfer_ms(num_bytes, rate_bps):
    """Least milliseconds `num_bytes` take on a link of `rate_bps` bits per second."""
    return 1000.0 * 8 * num_bytes / rate_bps


def ps_task_bytes(variable_bytes_by_device, num_ps):
    """[bytes of variables on ps task k] from a worker's placement ({device: bytes}).

    Devices named /job:ps/task:k count for task k; a task holding none gets 0.
    """
    per_task = [0] * num_ps
    for device, num_bytes in variable_bytes_by_device.items():
        if '/job:ps/task:' in device:
            per_task[int(device.split('/job:ps/task:')[1].split('/')[0])] += num_bytes
    return per_task


def has_traffic_model(variable_update):
    """Whether `expected_traffic` models a job of this strategy: a between-graph one, whose
    bytes go to the ps tasks or around the workers' ring."""
    strategy = modes.strategy(variable_update)
    return strategy.graph_per_worker and (strategy.uses_ps or strategy.worker_all_reduce)


def expected_traffic(variable_update, num_workers, model_bytes, ps_bytes=None,
                     gradient_scale=1.0):
    """Payload bytes per synchronous step each NIC sends and receives (module doc).

    Args:
      variable_update: a strategy of a between-graph job (`has_traffic_model`).
      num_workers: W.
      model_bytes: S, the variables' float32 bytes.
      ps_bytes: [S_k] per ps task (parameter-server modes); None: S split evenly over one.
      gradient_scale: g, the bytes a gradient element crosses the link in over 4 (0.5 for
        float16 and bfloat16 transfer).
    Returns:
      {'ps 0': (sent, received), ..., 'worker 0': (sent, received), ...}.
    Raises:
      ValueError: an unknown variable_update.
    """
    strategy = modes.strategy(variable_update)
    if not has_traffic_model(variable_update):
        raise ValueError('no traffic model for --variable_update=%s' % variable_update)
    if strategy.worker_all_reduce:
        each = 2.0 * (num_workers - 1) / num_workers * gradient_scale * model_bytes
        return {'worker %d' % w: (each, each) for w in range(num_workers)}
    ps_bytes = [model_bytes] if ps_bytes is None else ps_bytes
    traffic = {'ps %d' % k: (num_workers * s, num_workers * gradient_scale * s)
               for k, s in enumerate(ps_bytes)}
    traffic.update({'worker %d' % w: (gradient_scale * model_bytes, model_bytes)
                    for w in range(num_workers)})
    return traffic


def bound_ms(traffic, rates_bps):
    """({task: least ms of its busier direction}, the busiest task): no step is faster.

    Args:
      traffic: {task: (bytes sent, bytes received)} per step.
      rates_bps: {task: its NIC's rate}, or one rate for every task.
    """
    per_task = {task: transfer_ms(max(sent, received), _rate(rates_bps, task))
                for task, (sent, received) in traffic.items()}
    busiest = max(per_task, key=lambda t: (per_task[t], t))
    return per_task, busiest


def turns_ms(traffic, rates_bps):
    """The busiest NIC's sent plus received bytes at its rate: a synchronous ps step's
    estimate when its reads and its gradients take turns (module doc)."""
    return max(transfer_ms(sent + received, _rate(rates_bps, task))
               for task, (sent, received) in traffic.items())


def _rate(rates_bps, task):
    return rates_bps[task] if isinstance(rates_bps, dict) else rates_bps


@dataclasses.dataclass(frozen=True)
class LinkDiagnosis:
    """The figures of `python -m tfhp.diagnose` in cluster mode (module doc); ms throughout."""
    shaped_ms: float            # the chief's median step on the shaped links
    loopback_ms: float          # the same job on loopback
    one_process_ms: float       # one worker's configuration in one process
    link_exposure: float        # 1 - loopback / shaped (0 when loopback is slower)
    communication_exposure: float  # 1 - one process / shaped
    loopback_exposure: float    # 1 - one process / loopback: distribution's cost without links
    link_ms: float              # shaped - loopback
    measured: Dict[str, tuple]  # task -> (bytes sent, bytes received) per step, measured
    rates_bps: Dict[str, float]
    bound_ms: float             # the busiest NIC's measured bytes at its rate, busier direction
    busiest: str
    explained_ms: float         # what the measured bytes explain: bound_ms, or for a
                                # synchronous ps job the busiest NIC's two directions in turn
    model_bound_ms: Optional[float]  # the expected traffic's bound (ps NIC: W S / (K B))
    turns_ms: Optional[float]   # the expected traffic's both directions in turn (sync ps)
    verdict: str

    def to_dict(self):
        return dataclasses.asdict(self)


def _exposure(faster_ms, slower_ms):
    return max(0.0, 1.0 - faster_ms / slower_ms) if slower_ms > 0 else 0.0


def diagnose_cluster(shaped_ms, loopback_ms, one_process_ms, measured, rates_bps,
                     expected=None, synchronous=True):
    """The cluster diagnosis from the three runs' step times and the links' bytes.

    Args:
      shaped_ms, loopback_ms, one_process_ms: median step times, ms.
      measured: {task: (bytes sent, bytes received) per step} of the shaped job's NICs.
      rates_bps: {task: its NIC's rate}.
      expected: `expected_traffic` of the job (payload), or None where there is no model.
      synchronous: the job's steps are synchronous (then `turns_ms` of a ps job applies).
    Returns:
      A `LinkDiagnosis`.
    """
    per_task, busiest = bound_ms(measured, rates_bps)
    ps_job = any(t.startswith('ps ') for t in measured)
    explained = turns_ms(measured, rates_bps) if synchronous and ps_job else per_task[busiest]
    model_bound = turns = None
    if expected:
        model_bound = max(bound_ms(expected, rates_bps)[0].values())
        if synchronous and any(t.startswith('ps ') for t in expected):
            turns = turns_ms(expected, rates_bps)
    figures = dict(
        shaped_ms=shaped_ms, loopback_ms=loopback_ms, one_process_ms=one_process_ms,
        link_exposure=_exposure(loopback_ms, shaped_ms),
        communication_exposure=_exposure(one_process_ms, shaped_ms),
        loopback_exposure=_exposure(one_process_ms, loopback_ms),
        link_ms=shaped_ms - loopback_ms, measured=dict(measured), rates_bps=dict(rates_bps),
        bound_ms=per_task[busiest], busiest=busiest, explained_ms=explained,
        model_bound_ms=model_bound,
        turns_ms=turns)
    return LinkDiagnosis(verdict=_verdict(figures), **figures)


def _verdict(f):
    sent, received = f['measured'][f['busiest']]
    rate = f['rates_bps'][f['busiest']]
    nic = ('%s\'s NIC moves %.1f MB out and %.1f MB in per step: at %s at least %.0f ms' % (
        f['busiest'], sent / 1e6, received / 1e6, _rate_text(rate), f['bound_ms']))
    if f['explained_ms'] > f['bound_ms'] * 1.2:
        nic += ', about %.0f ms when reads and gradients take turns' % f['explained_ms']
    if f['link_exposure'] >= SIGNIFICANT:
        share = f['explained_ms'] / f['link_ms'] if f['link_ms'] > 0 else 0.0
        if share >= EXPLAINS:
            why = ('the links\' bandwidth is the limit: more ps tasks (the ps NIC carries '
                   'W x S / K), 16-bit gradients or an all-reduce move fewer bytes per NIC')
        else:
            # The emulated links shape bandwidth only: no latency can explain the rest.
            why = ('their bandwidth explains %.0f%% of that; the links add no latency, so the '
                   'rest is waiting that their bytes bring about (the synchronous barrier, the '
                   'ps applying the update, the tasks\' gRPC on shared cores)'
                   % (100.0 * share))
        return ('Bottleneck: the network links: they cost %.0f%% of the step (%.0f of %.0f ms, '
                'against the same job on loopback); %s; %s.' % (
                    100.0 * f['link_exposure'], f['link_ms'], f['shaped_ms'], nic, why))
    if f['communication_exposure'] >= SIGNIFICANT:
        return ('Bottleneck: distribution, not the links\' rate: the step is %.0f%% longer than '
                'one worker\'s compute alone even on loopback (%.0f%% communication exposure; '
                'the synchronous barrier, the ps\'s update and the tasks\' gRPC on shared '
                'cores), '
                'while the links cost only %.0f%% (%s).' % (
                    100.0 * (f['loopback_ms'] / f['one_process_ms'] - 1.0)
                    if f['one_process_ms'] > 0 else 0.0,
                    100.0 * f['communication_exposure'], 100.0 * f['link_exposure'], nic))
    return ('Bottleneck: compute: the shaped job\'s step is within %.0f%% of one worker\'s '
            'compute alone; %s (%.0f%% of the step).' % (
                100.0 * SIGNIFICANT, nic, 100.0 * f['bound_ms'] / f['shaped_ms']))


def _rate_text(rate_bps):
    return ('%g Gbit/s' % (rate_bps / 1e9) if rate_bps >= 1e9 else
            '%g Mbit/s' % (rate_bps / 1e6))


def format_cluster_diagnosis(d, labels=None):
    """The report printed by `python -m tfhp.diagnose` in cluster mode, ending with the verdict.

    Args:
      d: a `LinkDiagnosis`.
      labels: names of the three runs (default: shaped links, loopback, one process).
    """
    labels = labels or ('on the shaped links', 'on loopback', 'one process (compute)')
    lines = ['runs (the chief\'s median step time):']
    for label, ms in zip(labels, (d.shaped_ms, d.loopback_ms, d.one_process_ms)):
        lines.append('  %-28s %10.2f ms' % (label, ms))
    lines += [
        'link exposure:           %.0f%% (1 - loopback / shaped): %.1f ms of the step'
        % (100.0 * d.link_exposure, d.link_ms),
        'communication exposure:  %.0f%% (1 - one process / shaped); %.0f%% on loopback'
        % (100.0 * d.communication_exposure, 100.0 * d.loopback_exposure),
        'bytes per step, timed steps (sent / received), and their least time at the rate:']
    per_task = bound_ms(d.measured, d.rates_bps)[0]
    for task in sorted(d.measured):
        sent, received = d.measured[task]
        lines.append('  %-10s %12s %8.2f / %8.2f MB  >= %9.1f ms' % (
            task, _rate_text(d.rates_bps[task]), sent / 1e6, received / 1e6, per_task[task]))
    if d.model_bound_ms is not None:
        lines.append('expected (W x S / (K x B) at the ps NIC, per direction): >= %.1f ms%s' % (
            d.model_bound_ms, '; reads and gradients in turn: about %.1f ms' % d.turns_ms
            if d.turns_ms else ''))
    if d.explained_ms > d.bound_ms:
        lines.append('the busiest NIC\'s measured bytes, both directions in turn: about %.1f ms'
                     % d.explained_ms)
    lines += ['', d.verdict]
    return '\n'.join(lines)

"""What a step's traffic costs on links of a given rate, and the cluster mode of tfhp.diagnose.

Bytes per synchronous step each NIC carries, for W workers of a model of S bytes of float32
variables (`expected_traffic`; g = the gradients' share of float32, 0.5 for 16-bit transfer;
v = the variables' share as they come down, below 1 with compressed downlink deltas):
  parameter_server, distributed_replicated  ps task k, holding S_k of the variables: sends
      W * v * S_k (every worker reads them), receives W * g * S_k (every worker's gradient);
      a worker receives v * S and sends g * S. Balanced over K ps tasks, S_k = S / K.
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
W * S / (K * B). Over repeats (`diagnose_repeats`), the step times and bytes are the medians of
the repeats, the figures drawn from them (exposures, bounds) and the verdict those of the
medians, each figure printed with its [min-max] over the repeats; the verdict says how wide
that is. Pure arithmetic: no TensorFlow.
"""
import dataclasses
import statistics
from typing import Dict, Optional, Tuple

from tfhp import modes
from tfhp import timing

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
                     gradient_scale=1.0, variable_scale=1.0, colocated=False):
    """Payload bytes per synchronous step each NIC sends and receives (module doc).

    Args:
      variable_update: a strategy of a between-graph job (`has_traffic_model`).
      num_workers: W.
      model_bytes: S, the variables' float32 bytes.
      ps_bytes: [S_k] per ps task (parameter-server modes); None: S split evenly over one.
      gradient_scale: g, the bytes a gradient element crosses the link in over 4 (0.5 for
        float16 and bfloat16 transfer).
      variable_scale: v, the same for the variables a ps sends (--downlink_compression).
      colocated: ps task k runs on worker k's host (`launch_job(colocate_ps=True)`): the two
        share a NIC, and worker k's own share of S_k crosses none.
    Returns:
      {'ps 0': (sent, received), ..., 'worker 0': (sent, received), ...}, or with colocated
      {'worker 0': ..., ...}, one entry a NIC.
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
    traffic = {'ps %d' % k: (num_workers * variable_scale * s, num_workers * gradient_scale * s)
               for k, s in enumerate(ps_bytes)}
    traffic.update({'worker %d' % w: (gradient_scale * model_bytes, variable_scale * model_bytes)
                    for w in range(num_workers)})
    if colocated:
        for k, s in enumerate(ps_bytes):
            ps_sent, ps_received = traffic.pop('ps %d' % k)
            sent, received = traffic['worker %d' % k]
            traffic['worker %d' % k] = (sent + ps_sent - (gradient_scale + variable_scale) * s,
                                        received + ps_received -
                                        (gradient_scale + variable_scale) * s)
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
            # The emulated links shape bandwidth only (no delay is added): what their rate
            # does not explain is waiting, never round trips, so the verdict names none.
            why = ('their bandwidth explains %.0f%% of that; they shape bandwidth only, so the '
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


@dataclasses.dataclass(frozen=True)
class RepeatedDiagnosis:
    """The cluster diagnosis of a job run several times (`diagnose_repeats`)."""
    median: LinkDiagnosis            # of the median step times and bytes
    runs: Tuple[LinkDiagnosis, ...]  # each repeat's own
    verdict: str                     # the median's verdict, then how wide the repeats spread

    def spread(self, figure):
        """The `timing.Range` of a LinkDiagnosis field over the repeats, its centre the
        median's value (for step times the median itself; for exposures and bounds the value
        drawn from the medians)."""
        r = timing.Range.of(getattr(d, figure) for d in self.runs)
        return dataclasses.replace(r, median=getattr(self.median, figure))

    def bytes_spread(self, task, direction):
        """The `timing.Range` of a NIC's bytes per step (direction 0: sent, 1: received) over
        the repeats that measured it."""
        return timing.Range.of(d.measured[task][direction] for d in self.runs
                               if task in d.measured)


def diagnose_repeats(step_ms, measured, rates_bps, expected=None, synchronous=True):
    """The cluster diagnosis over repeats: the verdict from the medians, with their spread.

    Args:
      step_ms: [(shaped, loopback, one process) median step times, ms] of each repeat.
      measured: [{task: (bytes sent, bytes received) per step}] of each repeat's shaped job.
      rates_bps, expected, synchronous: as `diagnose_cluster` takes them (the same every
        repeat).
    Returns:
      A `RepeatedDiagnosis`.
    """
    runs = tuple(diagnose_cluster(*times, bytes_, rates_bps, expected, synchronous)
                 for times, bytes_ in zip(step_ms, measured))
    tasks = sorted(set().union(*measured))
    medians = {task: tuple(statistics.median(m[task][i] for m in measured if task in m)
                           for i in (0, 1)) for task in tasks}
    median = diagnose_cluster(*[statistics.median(t) for t in zip(*step_ms)], medians,
                              rates_bps, expected, synchronous)
    repeated = RepeatedDiagnosis(median, runs, verdict='')
    return dataclasses.replace(repeated, verdict=median.verdict + _spread_sentence(repeated))


def _spread_sentence(r):
    if len(r.runs) < 2:
        return ''
    link = r.spread('link_exposure')
    communication = r.spread('communication_exposure')
    shaped = r.spread('shaped_ms')
    text = (' Over %d repeats the link exposure spans %.0f\u2013%.0f%%, the communication '
            'exposure %.0f\u2013%.0f%% and the step on the links %.0f\u2013%.0f ms (%.0f%% of '
            'its median).' % (
                len(r.runs), 100.0 * link.low, 100.0 * link.high, 100.0 * communication.low,
                100.0 * communication.high, shaped.low, shaped.high,
                100.0 * (shaped.high - shaped.low) / shaped.median if shaped.median else 0.0))
    # The verdict weighs the link exposure first, the communication exposure only below it.
    deciding = [('link', link)] + ([('communication', communication)]
                                   if r.median.link_exposure < SIGNIFICANT else [])
    unsettled = [name for name, spread in deciding if spread.low < SIGNIFICANT <= spread.high]
    if unsettled:
        text += (' The %s exposure%s below %.0f%% in some repeats and above it in others: '
                 'the verdict is not settled (more --repeats, or emulated compute where the '
                 'tasks share the cores).' % (' and '.join(unsettled),
                                              ' is' if len(unsettled) == 1 else 's are',
                                              100.0 * SIGNIFICANT))
    return text


def format_cluster_diagnosis(r, labels=None, notes=()):
    """The report printed by `python -m tfhp.diagnose` in cluster mode, ending with the verdict.

    Each figure is printed as median [min-max] over the repeats (`timing.Range.text`; alone for
    one repeat).

    Args:
      r: a `RepeatedDiagnosis`.
      labels: names of the three runs (default: shaped links, loopback, one process).
      notes: lines printed just before the verdict.
    """
    d = r.median
    labels = labels or ('on the shaped links', 'on loopback', 'one process (compute)')
    lines = ['runs (the chief\'s median step time%s):' % (
        '; median [min\u2013max] of %d repeats' % len(r.runs) if len(r.runs) > 1 else '')]
    for label, figure in zip(labels, ('shaped_ms', 'loopback_ms', 'one_process_ms')):
        lines.append('  %-28s %10s ms' % (label, r.spread(figure).text('%.2f')))
    lines += [
        'link exposure:           %s (1 - loopback / shaped): %s ms of the step'
        % (r.spread('link_exposure').text('%.0f%%', 100.0), r.spread('link_ms').text('%.1f')),
        'communication exposure:  %s (1 - one process / shaped); %s on loopback'
        % (r.spread('communication_exposure').text('%.0f%%', 100.0),
           r.spread('loopback_exposure').text('%.0f%%', 100.0)),
        'bytes per step, timed steps (sent / received), and their least time at the rate:']
    per_task = bound_ms(d.measured, d.rates_bps)[0]
    for task in sorted(d.measured):
        sent, received = (r.bytes_spread(task, i).text('%.2f', 1e-6) for i in (0, 1))
        lines.append('  %-10s %12s %8s / %8s MB  >= %9.1f ms' % (
            task, _rate_text(d.rates_bps[task]), sent, received, per_task[task]))
    if d.model_bound_ms is not None:
        lines.append('expected (W x S / (K x B) at the ps NIC, per direction): >= %.1f ms%s' % (
            d.model_bound_ms, '; reads and gradients in turn: about %.1f ms' % d.turns_ms
            if d.turns_ms else ''))
    if d.explained_ms > d.bound_ms:
        lines.append('the busiest NIC\'s measured bytes, both directions in turn: about %.1f ms'
                     % d.explained_ms)
    lines += list(notes) + ['', r.verdict]
    return '\n'.join(lines)

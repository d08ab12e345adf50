"""The bottleneck report of `python -m tfhp.diagnose`: figures from ablation runs and a trace.

Definitions (T = median step time of a run, robust to the odd slow step of a shared machine):
  input exposure          1 - T(synthetic data) / T(configured): the share of the step spent
                          waiting for real input.
  communication exposure  1 - T(independent) / T(configured): the share spent aggregating
                          gradients and moving variables (independent towers do neither).
  scaling efficiency      images/sec(N devices) / (N * images/sec(one device)), which with
                          the same batch per device is T(one device) / T(configured).
  transfer bound          bytes moved between devices in the traced step / measured memcpy
                          bandwidth: the least time those copies can take.
The verdict names the largest of the exposures, the transfer bound and the scaling loss that
input and communication do not explain (1 - efficiency - both exposures), if it is at least 10%;
else the stage that keeps the busiest device busiest.
"""
import dataclasses
import time
from typing import Dict, Optional

import numpy as np

# An exposure below this is noise on a shared machine, not a bottleneck.
SIGNIFICANT = 0.10


def memcpy_bandwidth(num_bytes=64 << 20, repeats=5):
    """Bytes per second of one host memory copy (numpy), the best of `repeats`."""
    source = np.ones(num_bytes // 8, np.float64)
    target = np.empty_like(source)
    best = float('inf')
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(target, source)
        best = min(best, time.perf_counter() - start)
    return source.nbytes / best


def _step_ms(result):
    return result['step_time_ms']['p50']


@dataclasses.dataclass(frozen=True)
class Diagnosis:
    """Figures of `python -m tfhp.diagnose`; None where the run they need was skipped."""
    runs: Dict[str, dict]      # 'configured', 'synthetic data', ... -> benchmark result
    skipped: Dict[str, str]    # ablation -> why it was not run
    num_devices: int
    input_exposure: Optional[float]
    communication_exposure: Optional[float]
    scaling_efficiency: Optional[float]
    transfer_bytes: int        # between devices, in the traced step
    bandwidth: float           # measured memcpy bytes/sec
    transfer_bound: float      # transfer_bytes / bandwidth as a share of the configured step
    busiest_device: str
    busiest_stage: str
    busiest_stage_share: float  # of the busiest device's busy time
    verdict: str
    # The traced step's self time per stage, ms: {device: {stage: ms}}, stages in report
    # order, those with none left out (what `python -m tfhp.diagnose --plot` draws).
    stage_ms: Dict[str, Dict[str, float]] = dataclasses.field(default_factory=dict)

    def to_dict(self):
        return dataclasses.asdict(self)


def diagnose(runs, skipped, step, bandwidth, num_devices, shared_cores=None):
    """Computes the figures and the verdict.

    Args:
      runs: {name: benchmark result}; 'configured' is required, 'synthetic data',
        'independent' and 'one device' are used when present.
      skipped: {ablation name: reason it was not run}.
      step: the `StepAnalysis` of a traced step of the configured run.
      bandwidth: memcpy bytes per second.
      num_devices: towers of the configured run.
      shared_cores: when the devices are virtual CPU devices, the host's core count (they
        share those cores, which the verdict says); None otherwise.
    Returns:
      A `Diagnosis`.
    """
    base = runs['configured']

    def exposure(name):
        return max(0.0, 1.0 - _step_ms(runs[name]) / _step_ms(base)) if name in runs else None

    scaling = _step_ms(runs['one device']) / _step_ms(base) if 'one device' in runs else None
    busiest = max(step.devices, key=lambda d: d.busy)
    stage, stage_time = max(busiest.stages.items(), key=lambda item: item[1])
    figures = dict(
        input_exposure=exposure('synthetic data'),
        communication_exposure=exposure('independent'),
        scaling_efficiency=scaling,
        transfer_bytes=step.transfer_bytes,
        bandwidth=bandwidth,
        transfer_bound=step.transfer_bytes / bandwidth * 1e3 / _step_ms(base),
        busiest_device=busiest.device,
        busiest_stage=stage,
        busiest_stage_share=stage_time / busiest.busy if busiest.busy else 0.0)
    stage_ms = {d.device: {s: d.stages[s] / 1e3 for s in step.stage_names if d.stages.get(s)}
                for d in step.devices}
    return Diagnosis(runs=runs, skipped=skipped, num_devices=num_devices,
                     verdict=_verdict(figures, num_devices, shared_cores), stage_ms=stage_ms,
                     **figures)


def _verdict(f, num_devices, shared_cores):
    input_exposure, communication = f['input_exposure'], f['communication_exposure']
    candidates = [(f['transfer_bound'], 'bandwidth: copying the bytes moved per step takes at '
                   'least %.0f%% of the step at the measured memcpy bandwidth'
                   % (100.0 * f['transfer_bound']))]
    if input_exposure is not None:
        candidates.append((input_exposure, 'input: the step waits for real input %.0f%% of its '
                           'time (synthetic data runs faster)' % (100.0 * input_exposure)))
    if communication is not None:
        candidates.append((communication, 'communication: aggregating gradients and moving '
                           'variables take %.0f%% of the step (independent towers run faster)'
                           % (100.0 * communication)))
    if f['scaling_efficiency'] is not None:
        # Input and communication exposure are causes of poor scaling; the rest is not theirs.
        explained = (input_exposure or 0.0) + (communication or 0.0)
        why = ('the %d virtual CPU devices share the host\'s %d cores' % (num_devices,
                                                                          shared_cores)
               if shared_cores else 'look at the critical path and the idle time per device')
        candidates.append((1.0 - f['scaling_efficiency'] - explained, (
            'compute does not scale: %.0f%% scaling efficiency over %d devices, of which input '
            'and communication exposure explain %.0f points; %s' % (
                100.0 * f['scaling_efficiency'], num_devices, 100.0 * explained, why))))
    value, text = max(candidates, key=lambda c: c[0])
    if value >= SIGNIFICANT:
        return 'Bottleneck: %s.' % text
    return ('Bottleneck: compute: %s takes %.0f%% of the busiest device\'s (%s) busy time.'
            % (f['busiest_stage'], 100.0 * f['busiest_stage_share'], f['busiest_device']))


def _percent(value, how, skipped=None):
    """'12% (how)'; for a figure not measured 'n/a', with why when its ablation was skipped."""
    if value is None:
        return 'n/a (skipped: %s)' % skipped if skipped else 'n/a'
    return '%.0f%% (%s)' % (100.0 * value, how)


def format_diagnosis(d):
    """The report printed by `python -m tfhp.diagnose`, ending with the verdict."""
    lines = ['runs (median step time, images/sec):']
    for name, result in d.runs.items():
        lines.append('  %-16s %9.2f ms %10.1f images/sec' % (name, _step_ms(result),
                                                              result['images_per_sec']))
    for name, reason in d.skipped.items():
        lines.append('  %-16s skipped: %s' % (name, reason))
    step_ms = _step_ms(d.runs['configured'])
    lines += [
        'input exposure:          %s' % _percent(d.input_exposure, 'vs synthetic data',
                                                 d.skipped.get('synthetic data')),
        'communication exposure:  %s' % _percent(d.communication_exposure, 'vs independent',
                                                 d.skipped.get('independent')),
        'scaling efficiency:      %s' % _percent(d.scaling_efficiency,
                                                 '%d devices vs one' % d.num_devices,
                                                 d.skipped.get('one device')),
        'bytes moved per step:    %.3f MB between devices; at %.1f GB/s memcpy >= %.3f ms '
        '(%.1f%% of the step)' % (d.transfer_bytes / 1e6, d.bandwidth / 1e9,
                                  d.transfer_bound * step_ms, 100.0 * d.transfer_bound),
        'busiest device:          %s, %.0f%% of its busy time in %s' % (
            d.busiest_device, 100.0 * d.busiest_stage_share, d.busiest_stage),
        '',
        d.verdict,
    ]
    return '\n'.join(lines)

"""`python -m tfhp.predict --profile=P.json --workers=1,2,4,8 --ps=1,2 --rates=1gbit`: a step's
time, images/sec and scaling efficiency for each setting, from the step model
(`tfhp.prediction.step_model`), without running anything.

The profile gives each layer's compute and gradient bytes (`python -m tfhp.calibrate`); the
rates are NIC rates in tc's units, the payload each carries (the goodput the link check
measures: 956mbit on a 1 Gbit/s link of 1514-byte frames); --protocol_ms is the measured step
of a null_scalar job of the same tasks (the protocol's floor; 0 leaves it out); each ps task
holds the gradient bytes the job's placement gives it (--partition_min_bytes as the job's);
--colocate_ps puts ps task k on worker k's host, sharing its NIC, as the launcher's flag does.
A worker's towers meet over --bus_rate (default 126gbit: PCI Express 3.0 x16, 15.75 GB/s each
way). Speedup and efficiency are against one tower of the same setting alone, so the efficiency
is never above 1. Prints a table and one JSON line per setting; --plot draws images/sec against
workers, a line per (ps, rate), with linear scaling.
"""
import json
import sys

from absl import app
from absl import flags

from tfhp import modes
from tfhp import plots
from tfhp.emulation import profile as profile_lib
from tfhp.launcher import links
from tfhp.prediction import placement
from tfhp.prediction import step_model

FLAGS = flags.FLAGS


def _define_flags():
    """The command's flags, defined only when it runs (tests import this module beside
    tfhp.cli, whose flags share names with these)."""
    flags.DEFINE_string('profile', None, 'A compute profile (python -m tfhp.calibrate).')
    flags.DEFINE_list('workers', ['1', '2', '4', '8'], 'Worker counts W.')
    flags.DEFINE_list('ps', ['1'], 'ps task counts K (ignored by all-reduce strategies).')
    flags.DEFINE_list('rates', ['1gbit'], 'NIC rates (tc units: 500mbit, 1gbit, 10gbit).')
    flags.DEFINE_string('ps_rate', None, 'The ps tasks\' NIC rate (default: each rate).')
    flags.DEFINE_enum('variable_update', modes.DEFAULT_STRATEGY, list(modes.STRATEGIES),
                      'The strategy.')
    flags.DEFINE_integer('towers_per_worker', 1, 'Towers (devices) per worker.')
    flags.DEFINE_string('bus_rate', '126gbit', 'Rate between one worker\'s towers (tc units; '
                        'the default is PCI Express 3.0 x16: 15.75 GB/s each way).')
    flags.DEFINE_boolean('colocate_ps', False, 'ps task k runs on worker k\'s host and shares '
                         'its NIC (as tfhp.launch --colocate_ps places it).')
    flags.DEFINE_boolean('cross_replica_sync', True, 'Synchronous steps.')
    flags.DEFINE_float('protocol_ms', 0.0, 'Measured step of a null_scalar job of the same tasks.')
    flags.DEFINE_integer('fusion_bucket_bytes', 0, 'All-reduce strategies: gradients fused into '
                         'buckets of at most this many bytes, last layer first (0: each on its '
                         'own; more than the model: one pack after the backward pass).')
    flags.DEFINE_integer('partition_min_bytes', 0, 'ps strategies: variables of at least this '
                         'many bytes are split over the ps tasks, as the job\'s flag splits '
                         'them.')
    flags.DEFINE_string('plot', None, 'Draw images/sec against workers here (needs matplotlib).')


def grid(profile, workers, ps_counts, rates, variable_update, towers_per_worker=1,
         bus_bps=None, ps_bps=None, synchronous=True, protocol_s=0.0, fusion_bucket_bytes=0,
         partition_min_bytes=0, colocate_ps=False):
    """One record per (rate, ps, workers): the setting and its Prediction's figures; each ps
    task holds the bytes tfhp's placement gives it (`placement.ps_gradient_bytes`), on its own
    host or (colocate_ps) on a worker's."""
    records = []
    uses_ps = modes.strategy(variable_update).uses_ps
    for rate in rates:
        bps = links.parse_rate(rate)
        for ps in ps_counts:
            held = (tuple(placement.ps_gradient_bytes(profile, ps, partition_min_bytes))
                    if uses_ps else None)
            for w in workers:
                if colocate_ps and uses_ps and ps > w:
                    raise ValueError('--colocate_ps puts ps task k on worker k\'s host: '
                                     '--ps=%d is more than --workers=%d' % (ps, w))
                if colocate_ps and uses_ps and ps_bps:
                    raise ValueError('--ps_rate cannot apply with --colocate_ps: the ps tasks '
                                     'share their workers\' NICs')
                cluster = step_model.Cluster(num_workers=w, towers_per_worker=towers_per_worker,
                                             num_ps=ps, nic_bps=bps, ps_nic_bps=ps_bps,
                                             bus_bps=bus_bps, protocol_s=protocol_s,
                                             ps_gradient_bytes=held,
                                             ps_on_workers=colocate_ps and uses_ps)
                p = step_model.predict(profile, cluster, variable_update, synchronous,
                                       apply_s=profile.apply_s,
                                       fusion_bucket_bytes=fusion_bucket_bytes)
                records.append({'model': profile.model, 'update': variable_update,
                                'rate': rate, 'ps': ps, 'workers': w,
                                'step_ms': 1000 * p.step_s, 'images_per_sec': p.images_per_sec,
                                'speedup': p.speedup, 'efficiency': p.efficiency,
                                'alone_images_per_sec': p.images_per_sec / p.speedup,
                                'pull_ms': 1000 * p.pull_s, 'push_tail_ms': 1000 * p.push_tail_s,
                                'update_ms': 1000 * p.update_s})
    return records


def main(argv):
    del argv
    if not FLAGS.profile:
        print('tfhp.predict: error: --profile is required', file=sys.stderr)
        return 2
    try:
        profile = profile_lib.load(FLAGS.profile)
        records = grid(profile, [int(w) for w in FLAGS.workers], [int(k) for k in FLAGS.ps],
                       FLAGS.rates, FLAGS.variable_update, FLAGS.towers_per_worker,
                       links.parse_rate(FLAGS.bus_rate) if FLAGS.bus_rate else None,
                       links.parse_rate(FLAGS.ps_rate) if FLAGS.ps_rate else None,
                       FLAGS.cross_replica_sync, FLAGS.protocol_ms / 1000.0,
                       FLAGS.fusion_bucket_bytes, FLAGS.partition_min_bytes,
                       FLAGS.colocate_ps)
    except ValueError as e:
        print('tfhp.predict: error: %s' % e, file=sys.stderr)
        return 2
    print('%-8s %3s %4s %10s %10s %8s %6s' % ('rate', 'K', 'W', 'step ms', 'images/s',
                                             'speedup', 'eff'))
    for r in records:
        print('%-8s %3d %4d %10.1f %10.1f %8.2f %6.2f' % (
            r['rate'], r['ps'], r['workers'], r['step_ms'], r['images_per_sec'], r['speedup'],
            r['efficiency']))
    for r in records:
        print(json.dumps(r))
    if FLAGS.plot:
        plot(records, FLAGS.plot, profile)
    return 0


def plot(records, path, profile):
    """images/sec against workers, a line per (ps, rate), and linear scaling from one tower
    of the first setting."""
    def point(v):
        return {'median': v, 'min': v, 'max': v}
    series = []
    for key in sorted({(r['ps'], r['rate']) for r in records}):
        rows = [r for r in records if (r['ps'], r['rate']) == key]
        series.append(('K=%d, %s' % key, [r['workers'] for r in rows],
                       [point(r['images_per_sec']) for r in rows], {'dodge': False}))
    workers = sorted({r['workers'] for r in records})
    alone = records[0]['alone_images_per_sec']
    series.append(('linear', workers, [point(alone * w) for w in workers],
                   {'dodge': False, 'color': 'black', 'linestyle': ':', 'marker': None}))
    plots.line_panels(path, [('%s, %s' % (profile.model, records[0]['update']), series, [])],
                      'workers', 'images/sec (predicted)', xticks=[(w, str(w)) for w in workers])


def run_main():
    """Console-script entry point."""
    _define_flags()
    app.run(lambda argv: sys.exit(main(argv)))


if __name__ == '__main__':
    run_main()

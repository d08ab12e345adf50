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

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import app  # pylint: disable=g-import-not-at-top,wrong-import-position
from absl import flags

from tfhp import flag_help
from tfhp import modes
from tfhp import plots
from tfhp.emulation import profile as profile_lib
from tfhp.launcher import link_config

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


def main(argv):
    del argv
    if not FLAGS.profile:
        print('tfhp.predict: error: --profile is required', file=sys.stderr)
        return 2
    # The placement imports TensorFlow (the replication package): only for a run, not --help.
    from tfhp.prediction import grid  # pylint: disable=g-import-not-at-top
    try:
        profile = profile_lib.load(FLAGS.profile)
        records = grid.records(
            profile, [int(w) for w in FLAGS.workers], [int(k) for k in FLAGS.ps],
            [(rate, link_config.parse_rate(rate)) for rate in FLAGS.rates],
            FLAGS.variable_update, FLAGS.towers_per_worker,
            link_config.parse_rate(FLAGS.bus_rate) if FLAGS.bus_rate else None,
            link_config.parse_rate(FLAGS.ps_rate) if FLAGS.ps_rate else None,
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
    app.run(lambda argv: sys.exit(main(argv)), flags_parser=lambda argv: flag_help.parse(
        argv, __doc__, [('flags', FLAGS.get_flags_for_module(__name__))]))


if __name__ == '__main__':
    run_main()

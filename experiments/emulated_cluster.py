"""Jobs of emulated workers on emulated links, each beside the predictor's step.

Every row is one job: W workers of a model's compute profile (`--emulated_compute`: the real
variables, waits for compute), K ps tasks, every NIC at one rate. Its figures: the chief's global
step, images/sec, the share of the step that is not compute (1 - compute / step: communication,
the ps's update and the protocol), how busy the cores were in the timed steps (at 90% or more
the CPU, not the links, set that step), the compute part as it happened against the profile's
(`compute_error`: the worst worker's waits, which a busy core makes late), and
`tfhp.prediction.step_model`'s step for the same setting. Two of the model's inputs are measured
first: the protocol floor, once per worker count (the global step of a null_scalar job of W
workers and 1 ps on loopback: nothing to move, nothing to compute), and each rate's goodput, the
TCP payload one stream carries on the emulated link (`tfhp.launcher.link_probe`, the median of
3 probes: 95.6% of the rate with 1514-byte frames), at which the model moves the gradients. A
row also counts the job's TCP retransmission timeouts (`links.losses`), start-up included: each
idles a flow for 200 ms or more, where many workers push into one ps's port (incast), and the
model knows none; --link_port_buffer deepens the switch ports, which 16 workers at 100 Mbit/s
overflow (`tfhp.launcher.links`).
With --max_comm_share it answers "how many ps tasks keep communication under X% of the step":
the smallest K whose every repeat is under it, measured and predicted. --profile takes several
profiles (a model each); --plot draws every row's predicted against measured step (and an SVG
beside it), captioned with the machine, the date and the commit the study started at. Each record
keeps that caption, so `--replot=FILE,...` draws --plot again from written records (of several
runs) without running anything.

  python -m experiments.emulated_cluster --profile=resnet20.json \\
      --workers=4 --ps=1,2,3 --rates=500mbit --max_comm_share=0.2 --repeats=3
  python -m experiments.emulated_cluster --profile=null_dense.json,lenet.json,resnet20.json \\
      --workers=1,2,4,6 --ps=1 --rates=300mbit,1gbit --plot=validation.png
  python -m experiments.emulated_cluster --replot=w1_6.jsonl,w8_32.jsonl --plot=validation.png
"""
import functools
import json
import statistics

from absl import flags

from experiments import common
from experiments import frame
from experiments import link_flags
from experiments.figures import prediction
from tfhp import modes
from tfhp import provenance
from tfhp.emulation import profile as profile_lib
from tfhp.launcher import link_probe
from tfhp.launcher import link_config
from tfhp.launcher import links
from tfhp.prediction import placement
from tfhp.prediction import step_model

FLAGS = flags.FLAGS
PARTITION_MIN_BYTES = 1 << 18
FIGURES = ('global_step_ms', 'images_per_sec', 'comm_share', 'cpu_busy', 'predicted_ms',
           'compute_error', 'tcp_timeouts')
TABLE = [('model', 'model', None), ('W', 'workers', '%d'), ('K', 'ps', '%d'), ('rate', 'rate', None),
         ('step ms', 'global_step_ms', '%.1f'), ('predicted', 'predicted_ms', '%.1f'),
         ('images/s', 'images_per_sec', '%.1f'), ('not compute', 'comm_share', '%.2f'),
         ('cpu busy', 'cpu_busy', '%.2f'), ('compute err', 'compute_error', '%+.3f'),
         ('TCP timeouts', 'tcp_timeouts', '%d')]


def _partition_min_bytes(update, ps):
    """The --partition_min_bytes of this study's jobs: variables of 256 KiB and more are split
    over the ps tasks where the strategy can."""
    return PARTITION_MIN_BYTES if modes.strategy(update).partitions and ps > 1 else 0


def predicted_ms(profile, workers, ps, goodput_bps, update, protocol_s):
    """The step model's global step (ms) for a job of this study, its NICs carrying
    `goodput_bps` of payload and its ps tasks the bytes the job's placement gives them."""
    held = (tuple(placement.ps_gradient_bytes(profile, ps, _partition_min_bytes(update, ps)))
            if modes.strategy(update).uses_ps else None)
    cluster = step_model.Cluster(num_workers=workers, num_ps=ps, nic_bps=goodput_bps,
                                 protocol_s=protocol_s, ps_gradient_bytes=held)
    return 1000.0 * step_model.predict(profile, cluster, update, apply_s=profile.apply_s).step_s


def protocol_floor_s(workers):
    """The global step (s) of a null_scalar job of `workers` workers and 1 ps on loopback."""
    outcome = common.run_cluster(1, workers, [
        '--model=null_scalar', '--num_batches=100', '--num_warmup_batches=10',
        '--display_every=1000', '--peer_timeout_s=%d' % FLAGS.peer_timeout_s],
        timeout_s=FLAGS.job_timeout_s)
    if outcome.error:
        raise RuntimeError('null_scalar, W=%d: %s' % (workers, outcome.error))
    return 1.0 / common.cluster_figures(outcome.summary)['global_steps_per_sec']


def goodput_bps(rate, probes=3, options=None):
    """The payload bits per second one TCP stream carries between two tasks on emulated links
    of `rate` that behave as `options` says (`link_probe.measure`): the median of `probes`
    probes, since one probe taken just after the floor jobs once read 87.4% of the rate where
    every other read 95.6%."""
    with links.EmulatedNetwork([('ps', 0), ('worker', 0)], link_config.parse_rate(rate),
                               options=options) as network:
        return statistics.median(link_probe.measure(network, ('worker', 0), ('ps', 0)).goodput_bps
                                 for _ in range(probes))


def measure(path, profile, floors, goodputs, workers, ps, rate, seed, caption):
    """One job of the profile at `path`; its record."""
    update = FLAGS.variable_update
    args = profile.tfhp_args(path) + [
        '--num_batches=%d' % FLAGS.steps, '--num_warmup_batches=%d' % FLAGS.warmup_steps,
        '--tf_random_seed=%d' % seed, '--variable_update=' + update,
        '--display_every=1000', '--peer_timeout_s=%d' % FLAGS.peer_timeout_s]
    if _partition_min_bytes(update, ps):
        args.append('--partition_min_bytes=%d' % _partition_min_bytes(update, ps))
    options = link_flags.options()
    outcome = common.run_cluster(ps if modes.strategy(update).uses_ps else 0, workers, args,
                                 link_bandwidth=rate, timeout_s=FLAGS.job_timeout_s,
                                 link_options=options)
    if outcome.error:
        raise RuntimeError('W=%d K=%d %s: %s' % (workers, ps, rate, outcome.error))
    figures = common.cluster_figures(outcome.summary)
    step_ms = 1000.0 / figures['global_steps_per_sec']
    busy = outcome.summary['cpu']['busy_timed']
    waited_ms = worst_compute_ms(outcome.results, profile)
    return {'study': 'emulated_cluster', 'model': profile.model, 'update': update,
            **link_flags.record(options), 'caption': caption,
            'workers': workers, 'ps': ps, 'rate': rate, 'seed': seed,
            'global_step_ms': step_ms, 'images_per_sec': figures['images_per_sec'],
            'comm_share': 1.0 - 1000.0 * profile.compute_s / step_ms, 'cpu_busy': busy,
            'predicted_ms': predicted_ms(profile, workers, ps, goodputs[rate], update,
                                         floors[workers]),
            'goodput_bps': goodputs[rate],
            'tcp_timeouts': outcome.summary['links']['tcp_timeouts'],
            'protocol_ms': 1000.0 * floors[workers], 'compute_ms': 1000.0 * profile.compute_s,
            'waited_ms': waited_ms, 'compute_error': waited_ms / (1000.0 * profile.compute_s) - 1}


def worst_compute_ms(results, profile):
    """The compute part of the worker whose waits lasted furthest from the profile's compute
    time (`Figures.emulated_compute_ms`): how faithful the emulation stayed on busy cores."""
    waited = [r['emulated_compute_ms'] for (job, _), r in results.items() if job == 'worker']
    return max(waited, key=lambda ms: abs(ms - 1000.0 * profile.compute_s))


def smallest_ps(records, share, key):
    """{(model, workers, rate): the smallest ps count whose `key` is under `share` (None: none
    is)}."""
    answer = {}
    for r in records:
        under = r[key]['max'] < share if isinstance(r[key], dict) else r[key] < share
        setting = (r['model'], r['workers'], r['rate'])
        best = answer.get(setting)
        if under and (best is None or r['ps'] < best):
            answer[setting] = r['ps']
        answer.setdefault(setting, None)
    return answer


def _predicted_share(record):
    return 1.0 - record['compute_ms'] / record['predicted_ms']['median']


def plot(records, path):
    """Predicted against measured global steps, a series per model and rate, at `path`; the
    caption: each distinct caption of the records (the runs' machine, date and commit)."""
    series = {}
    for r in records:
        label = '%s, %s' % (r['model'], r['rate'])
        # Records written before commit 52a41b8 may name a FIFO queue or an RTO floor.
        if r.get('link_queue', 'fifo') != 'fair':
            label += ', FIFO queues'
        if r.get('rto_min_ms'):
            label += ', RTO floor %d ms' % r['rto_min_ms']
        if r.get('port_buffer_bytes'):
            label += ', %.3g MiB ports' % (r['port_buffer_bytes'] / 2 ** 20)
        elif 'port_buffer_bytes' in r:  # recorded since the option exists: the default
            label += ', 20 ms ports'
        if r.get('congestion_control'):
            label += ', ' + r['congestion_control']
        measured, predicted = series.setdefault(label, ([], []))
        measured.append(r['global_step_ms'])
        predicted.append(r['predicted_ms']['median'])
    captions = sorted({r['caption'] for r in records if r.get('caption')})
    prediction.draw(
        path, [(label, m, p) for label, (m, p) in series.items()],
        title='The step model against emulated jobs (global step, median [min-max])',
        caption=provenance.join(captions) or None)


def replot(paths, path):
    """Draws `path` (and its SVG) from the emulated_cluster records in the JSON-lines files at
    `paths`."""
    records = []
    for records_file in paths:
        with open(records_file) as f:
            records += [r for r in map(json.loads, filter(str.strip, f))
                        if r.get('study') == 'emulated_cluster']
    if not records:
        raise ValueError('--replot: no emulated_cluster records in %s' % ', '.join(paths))
    common.draw(lambda out: plot(records, out), path)


def study():
    """Every (profile, rate, workers, ps), --repeats times in rounds; the answer to the
    question."""
    if FLAGS.replot:
        if not FLAGS.plot:
            raise ValueError('--replot draws --plot: give --plot')
        return replot(FLAGS.replot, FLAGS.plot)
    if not FLAGS.profile:
        raise ValueError('--profile: give the compute profiles to run (or --replot)')
    caption = provenance.caption()  # the commit that ran, not the one at the end
    profiles = [(path, profile_lib.load(path)) for path in FLAGS.profile]
    floors = {int(w): protocol_floor_s(int(w)) for w in FLAGS.workers}
    goodputs = {rate: goodput_bps(rate, options=link_flags.options()) for rate in FLAGS.rates}
    rows = [functools.partial(measure, path, profile, floors, goodputs, int(w), int(k), rate,
                              caption=caption)
            for path, profile in profiles
            for rate in FLAGS.rates for w in FLAGS.workers for k in FLAGS.ps]
    def finish(records):
        for r in records:
            r['predicted_share'] = _predicted_share(r)
        return records
    records = frame.run(rows, FIGURES, TABLE, finish=finish, plot=plot)
    if FLAGS.max_comm_share is not None:
        measured = smallest_ps(records, FLAGS.max_comm_share, 'comm_share')
        predicted = smallest_ps(records, FLAGS.max_comm_share, 'predicted_share')
        none = 'none of K = %s' % ', '.join(FLAGS.ps)
        for setting, k in sorted(measured.items()):
            print('%s, W=%d at %s: smallest ps count with communication under %.0f%% of the '
                  'step: measured %s, predicted %s' % (setting + (100 * FLAGS.max_comm_share,
                                                                  k or none,
                                                                  predicted[setting] or none)))


if __name__ == '__main__':
    flags.DEFINE_list('profile', None, 'Compute profiles (python -m tfhp.calibrate), a model each.')
    flags.DEFINE_list('workers', ['4'], 'Worker counts.')
    flags.DEFINE_list('ps', ['1', '2', '3'], 'ps task counts.')
    flags.DEFINE_list('rates', ['500mbit'], 'NIC rates (tc units).')
    flags.DEFINE_string('variable_update', modes.DEFAULT_STRATEGY, 'The strategy of every job.')
    link_flags.define()
    flags.DEFINE_float('max_comm_share', None, 'Answer: the smallest ps count whose share of the '
                       'step that is not compute stays under this.')
    # 33 TensorFlow processes take about 5 minutes to start on two cores.
    flags.DEFINE_integer('peer_timeout_s', 240, 'Each task\'s bound on a silent peer.')
    flags.DEFINE_integer('job_timeout_s', 600, 'Bound on each job, start to end.')
    flags.DEFINE_list('replot', None, 'Draw --plot from these JSON-lines files of records '
                      'and run nothing.')
    frame.main(study, steps=20, warmup_steps=5, plot='predicted against measured steps')

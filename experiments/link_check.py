"""How close emulated links (`tfhp.launcher.links`) come to their configured rate, both ways.

For each rate: an EmulatedNetwork of two tasks, both links at that rate, and one TCP stream from
task a to task b, then from b to a (`tfhp.launcher.link_probe`), --repeats times. Prints one JSON
line per rate (appended to --result_file if given): the configured Mbit/s and, per direction,
the link's measured Mbit/s (frames the tbf passed, every header counted) and the TCP goodput
(payload; at most 95.6% of the link with 1514-byte frames), each as median [min-max] over the
repeats (experiments/stats.py; no seed: nothing here is random), and the worst relative error
of any repeat. Needs root and iproute2; imports no TensorFlow.

  python -m experiments.link_check --rates=100mbit,1gbit --repeats=3
  python -m experiments.link_check --rates=100mbit,200mbit,1gbit,2gbit --seconds=3
"""
import json
import sys

from absl import flags

from experiments import frame
from experiments import stats
from tfhp import timing
from tfhp.launcher import link_probe
from tfhp.launcher import link_config
from tfhp.launcher import links

FLAGS = flags.FLAGS


def define_flags():
    """Defines the study's own flags, the common ones being the frame's (only when run as a
    script, so tests can import it)."""
    flags.DEFINE_list('rates', ['100mbit', '200mbit', '1gbit'], 'Link rates, in tc units.')
    flags.DEFINE_float('seconds', 2.0, 'How long each direction sends.')
    flags.DEFINE_float('warmup_s', 0.3, 'Leading part of each transfer left out of the figures.')


_TASKS = [('worker', 0), ('worker', 1)]


def summarise(rate, rate_bps, forward, backward):
    """The record of one rate from its measurements (link_probe throughputs) each way."""
    def mbit(throughputs):
        return {'link_mbit': stats.summarise([round(t.link_bps / 1e6, 1) for t in throughputs]),
                'goodput_mbit': stats.summarise([round(t.goodput_bps / 1e6, 1)
                                                 for t in throughputs])}
    error = max(abs(t.link_bps / rate_bps - 1) for t in list(forward) + list(backward))
    return {'rate': rate, 'configured_mbit': rate_bps / 1e6, 'repeats': len(forward),
            'a_to_b': mbit(forward), 'b_to_a': mbit(backward), 'link_error': round(error, 4)}


def check(rate):
    """The record of one rate: configured and measured Mbit/s each way, --repeats times."""
    rate_bps = link_config.parse_rate(rate)
    forward, backward = [], []
    with links.EmulatedNetwork(_TASKS, rate_bps) as network:
        for _ in range(FLAGS.repeats):
            forward.append(link_probe.measure(network, _TASKS[0], _TASKS[1], FLAGS.seconds,
                                              FLAGS.warmup_s))
            backward.append(link_probe.measure(network, _TASKS[1], _TASKS[0], FLAGS.seconds,
                                               FLAGS.warmup_s))
    return summarise(rate, rate_bps, forward, backward)


def study():
    """Every rate of --rates checked, each record written as soon as it is measured.

    Returns:
      2 (and why, on stderr) where emulated links cannot run or a rate is wrong; else 0.
    """
    try:
        for rate in FLAGS.rates:  # Every rate is checked before the first is measured.
            link_config.parse_rate(rate)
        links.check_available()
    except ValueError as e:  # LinksUnavailable is one
        print('link_check: %s' % e, file=sys.stderr)
        return 2
    links.cleanup_stale()
    with links.exit_on_sigterm():
        for rate in FLAGS.rates:
            record = check(rate)
            print(json.dumps(record, sort_keys=True), flush=True)
            if FLAGS.result_file:
                timing.append_json(FLAGS.result_file, record)
    return 0


if __name__ == '__main__':
    define_flags()
    # --repeats: measurements of each rate and direction; nothing here is random.
    frame.main(study, repeats=1, seed=None)

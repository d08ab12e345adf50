"""In-graph replication: images/sec of each variable update and all-reduce choice vs devices.

Every variant (`presets.REPLICATION`) trains the same small model on synthetic data on 1, 2 and
4 devices (virtual CPU devices on a CPU: they share the host's cores, so more devices add
communication and scheduling work, never compute). Scaling efficiency is images/sec on N devices
over N times the variant's own one-device figure, per repeat (repeat r on N devices over repeat
r on one).

Every (variant, devices) row runs --repeats times, seeds --seed + r, in rounds over all rows
(a slow spell of the machine hits them alike); figures are median [min-max] over the
repeats, '*' marking a range apart from `independent`'s at the same device count (no
aggregation at all: the reference; experiments/stats.py). Prints a table and one JSON line per
row (appended to --result_file if given); --plot draws images/sec and efficiency vs devices.

  python -m experiments.replication_bench --plot=replication.png   # all 13 variants: ~7 minutes
  python -m experiments.replication_bench --devices=1,2 --num_batches=2 --variants=replicated
"""
import functools

from absl import flags

from experiments import common
from experiments import frame
from experiments import presets
from experiments import stats
from tfhp.runner import benchmark
from tfhp import compat
from tfhp import config as config_lib
from tfhp import plots
from tfhp import provenance

FLAGS = flags.FLAGS


def define_flags():
    """Defines the study's own flags (the common ones are the frame's).

    Called only when run as a script: importing the module (e.g. from tests, beside other
    experiments that define flags of the same names) defines none.
    """
    flags.DEFINE_list('variants', sorted(presets.REPLICATION),
                      'Variants to run (experiments/presets.py: REPLICATION).')
    flags.DEFINE_list('devices', ['1', '2', '4'], 'Device counts.')
    flags.DEFINE_string('model', 'lenet', 'Model (small: the point is communication).')
    flags.DEFINE_integer('batch_size', 32, 'Per-device batch size.')


REFERENCE = 'independent'
FIGURES = ('images_per_sec', 'step_time_ms_p50', 'scaling_efficiency', 'final_loss')


def measure(variant, num_devices, model, batch_size, num_batches, num_warmup_batches,
            seed=1234):
    """One benchmark run of `variant` (a `presets.REPLICATION` name) on `num_devices` devices;
    returns its JSON record."""
    replication, cluster = presets.REPLICATION[variant].config_fields()
    cfg = config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name=model, batch_size=batch_size),
        device=config_lib.DeviceConfig(num_devices=num_devices),
        replication=config_lib.ReplicationConfig(**replication),
        cluster=config_lib.ClusterConfig(**cluster),
        run=config_lib.RunConfig(num_batches=num_batches,
                                 num_warmup_batches=num_warmup_batches,
                                 display_every=num_batches, tf_random_seed=seed))
    result = benchmark.run(cfg, log=lambda _: None)
    return {'study': 'replication', 'variant': variant, 'num_devices': num_devices,
            'model': model, 'batch_size': batch_size,
            'images_per_sec': result['images_per_sec'],
            'step_time_ms_p50': result['step_time_ms']['p50'],
            'final_loss': result['final_loss'], 'seed': seed, 'config': cfg.to_dict()}


def add_efficiency(records):
    """Scaling efficiency of each repeat: images/sec on N devices / (N x repeat r on one).

    Args:
      records: combined records (`stats.combine`) of one variant's device counts.
    """
    one = next((r for r in records if r['num_devices'] == 1), None)
    for r in records:
        if one:
            ratios = [ips / (r['num_devices'] * base) for ips, base in zip(
                r['images_per_sec']['values'], one['images_per_sec']['values'])]
            r['scaling_efficiency'] = stats.summarise(ratios)
    return records


TABLE = [('variant', 'variant', None), ('devices', 'num_devices', '%d'),
         ('images/s', 'images_per_sec', '%.0f'), ('step ms p50', 'step_time_ms_p50', '%.1f'),
         ('efficiency', 'scaling_efficiency', '%.2f')]


def add_efficiencies(records):
    """`add_efficiency` of each variant's records."""
    for variant in dict.fromkeys(r['variant'] for r in records):
        add_efficiency([r for r in records if r['variant'] == variant])
    return records


def print_tables(records):
    """One table per device count, marked against `independent` at that count."""
    for n in sorted({r['num_devices'] for r in records}):
        rows = [r for r in records if r['num_devices'] == n]
        reference = next((r for r in rows if r['variant'] == REFERENCE), None)
        if reference:
            stats.mark(rows, reference, FIGURES)
        common.print_table(rows, TABLE, reference and '%s on %d device%s' % (
            REFERENCE, n, '' if n == 1 else 's'))
        print()


def plot(records, path):
    """images/sec and scaling efficiency vs devices, a line per variant."""
    variants = sorted({r['variant'] for r in records})
    series = {key: [(v, [r['num_devices'] for r in records if r['variant'] == v],
                     [r.get(key) for r in records if r['variant'] == v]) for v in variants]
              for key in ('images_per_sec', 'scaling_efficiency')}
    counts = sorted({r['num_devices'] for r in records})
    plots.line_panels(path, [('throughput, all devices together', series['images_per_sec'],
                              [], 'images/sec'),
                             ('scaling efficiency', series['scaling_efficiency'],
                              [(1.0, 'linear scaling')],
                              'images/sec on N / (N x images/sec on 1)')],
                      'devices (virtual CPU devices share the host cores)', None,
                      title='in-graph replication, %s, %s' % (
                          records[0]['model'], plots.spread_text(records[0]['repeats'])),
                      xticks=[(n, str(n)) for n in counts], caption=provenance.caption())


def study():
    """Every variant of --variants on every device count, measured and reported."""
    compat.enable_graph_mode()
    frame.run([functools.partial(measure, v, int(n), FLAGS.model, FLAGS.batch_size, FLAGS.steps,
                                 FLAGS.warmup_steps)
               for v in FLAGS.variants for n in FLAGS.devices],
              FIGURES, print_tables, finish=add_efficiencies, plot=plot)


if __name__ == '__main__':
    define_flags()
    frame.main(study, steps=30, warmup_steps=5,
               plot='images/sec and scaling efficiency vs devices')

"""In-graph replication: images/sec of each variable update and all-reduce choice vs devices.

Every variant trains the same small model on synthetic data on 1, 2 and 4 devices (virtual CPU
devices on a CPU: they share the host's cores, so more devices add communication and
scheduling work, never compute). Scaling efficiency is images/sec on N devices over N times the
variant's own one-device figure. Prints a table and one JSON line per run (appended to
--result_file if given).

  python -m experiments.replication_bench                      # full figures (a few minutes)
  python -m experiments.replication_bench --devices=1,2 --num_batches=2 --variants=replicated
"""

from absl import app
from absl import flags

from experiments import common
from tfhp import benchmark
from tfhp import compat
from tfhp import config as config_lib

# name -> (ReplicationConfig fields, ClusterConfig fields)
VARIANTS = {
    'parameter_server': ({}, {}),
    'parameter_server_staged': ({'staged_vars': True}, {}),
    'parameter_server_async': ({}, {'cross_replica_sync': False}),
    'independent': ({'variable_update': 'independent'}, {}),
    'replicated': ({'variable_update': 'replicated'}, {}),
    'replicated_pscpu#2': ({'variable_update': 'replicated', 'all_reduce_spec': 'pscpu#2'}, {}),
    'replicated_psgpu': ({'variable_update': 'replicated', 'all_reduce_spec': 'psgpu'}, {}),
    'replicated_xring': ({'variable_update': 'replicated', 'all_reduce_spec': 'xring'}, {}),
    'replicated_collective': ({'variable_update': 'replicated',
                               'all_reduce_spec': 'collective'}, {}),
    'replicated_hierarchical_copy': ({'variable_update': 'replicated',
                                      'hierarchical_copy': True}, {}),
    'replicated_xring_repacking2': ({'variable_update': 'replicated', 'all_reduce_spec': 'xring',
                                     'gradient_repacking': 2}, {}),
    'replicated_xring_small_grads': ({'variable_update': 'replicated',
                                      'all_reduce_spec': 'pscpu:4k:xring',
                                      'agg_small_grads_max_bytes': 65536}, {}),
    'replicated_xring_bfloat16': ({'variable_update': 'replicated', 'all_reduce_spec': 'xring',
                                   'gradient_transfer_dtype': 'bfloat16'}, {}),
}

FLAGS = flags.FLAGS


def define_flags():
    """Defines the script's flags.

    Called only when run as a script: importing the module (e.g. from tests, beside other
    experiments that define flags of the same names) defines none.
    """
    flags.DEFINE_list('variants', sorted(VARIANTS), 'Variants to run (see VARIANTS).')
    flags.DEFINE_list('devices', ['1', '2', '4'], 'Device counts.')
    flags.DEFINE_string('model', 'lenet', 'Model (small: the point is communication).')
    flags.DEFINE_integer('batch_size', 32, 'Per-device batch size.')
    flags.DEFINE_integer('num_batches', 30, 'Timed steps per run.')
    flags.DEFINE_integer('num_warmup_batches', 5, 'Untimed steps per run.')
    flags.DEFINE_string('result_file', None, 'Append JSON lines here.')


def measure(variant, num_devices, model, batch_size, num_batches, num_warmup_batches):
    """One benchmark run of `variant` on `num_devices` devices; returns its JSON record."""
    replication, cluster = VARIANTS[variant]
    cfg = config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name=model, batch_size=batch_size),
        device=config_lib.DeviceConfig(num_devices=num_devices),
        replication=config_lib.ReplicationConfig(**replication),
        cluster=config_lib.ClusterConfig(**cluster),
        run=config_lib.RunConfig(num_batches=num_batches,
                                 num_warmup_batches=num_warmup_batches,
                                 display_every=num_batches))
    result = benchmark.run(cfg, log=lambda _: None)
    return {'study': 'replication', 'variant': variant, 'num_devices': num_devices,
            'model': model, 'batch_size': batch_size,
            'images_per_sec': result['images_per_sec'],
            'step_time_ms_p50': result['step_time_ms']['p50'],
            'final_loss': result['final_loss'], 'config': cfg.to_dict()}


def main(_):
    compat.enable_graph_mode()
    counts = [int(d) for d in FLAGS.devices]
    results = []
    for variant in FLAGS.variants:
        baseline = None
        for n in counts:
            record = measure(variant, n, FLAGS.model, FLAGS.batch_size, FLAGS.num_batches,
                             FLAGS.num_warmup_batches)
            if n == 1:
                baseline = record['images_per_sec']
            if baseline:
                record['scaling_efficiency'] = record['images_per_sec'] / (n * baseline)
            results.append(record)
    print('%-30s %7s %12s %10s %10s' % ('variant', 'devices', 'images/sec', 'step ms',
                                         'efficiency'))
    for r in results:
        print('%-30s %7d %12.1f %10.2f %10s' % (
            r['variant'], r['num_devices'], r['images_per_sec'], r['step_time_ms_p50'],
            '%.2f' % r['scaling_efficiency'] if 'scaling_efficiency' in r else '-'))
    common.write_records(results, FLAGS.result_file)


if __name__ == '__main__':
    define_flags()
    app.run(main)

"""One job on emulated links and its figures, for experiments/links_study.py.

`measure` runs a job (`common.run_cluster`, every task in a network namespace with a
token-bucket-shaped NIC, or on loopback) and returns its record:
  labels, 'rate' ('loopback' or a tc rate), 'num_ps', 'num_workers', 'seed', 'status', 'error';
  measured figures (summarised over repeats by the study): global_step_ms (1000 / the chief's
    global steps per second over its timed steps), images_per_sec, dropped_gradients,
    comm_bound_ms (the launcher's: start-up bytes included), timed_comm_bound_ms (the timed
    steps' bytes of the busiest NIC at its rate, busier direction), ps_sent_mb and
    ps_received_mb (per global step, the busiest ps task), worker_sent_mb and
    worker_received_mb (per step, the workers' mean), vs_turns (global_step_ms / turns_ms),
    vs_timed_bound (global_step_ms / timed_comm_bound_ms: 1 is the links' limit) and
    cores_busy (the busy share of the machine's cores in the timed steps,
    `tfhp.launcher.cpu_load`);
  expected figures, the same every repeat (`tfhp.profiling.link_bound`): model_mb (S, the
    float32 variables), bound_ms (the busiest NIC's expected bytes at its rate, busier
    direction: W x S / (K x B) at the ps), turns_ms (both directions in turn: a synchronous ps
    step's estimate).
"""
import statistics

from absl import app

from experiments import common
from experiments import link_flags
from experiments import presets
from tfhp import compression
from tfhp import config as config_lib
from tfhp import modes
from tfhp.emulation import profile as profile_lib
from tfhp.launcher import link_config
from tfhp.launcher import plan
from tfhp.profiling import link_bound

# Model name -> its tfhp flags. null_dense: one 16 MiB float32 vector and no compute, the pure
# parameter-traffic probe; lenet: a real model (two convolutions, 35 ms a step of batch 32 on
# this 2-core CPU) whose bytes are 97% one dense layer, like VGG's first fully connected layer;
# trivial: the tests' few-millisecond job.
MODELS = {
    'null_dense': ['--model=null_dense', '--batch_size=1', '--weight_decay=0'],
    'lenet': ['--model=lenet', '--batch_size=32', '--num_classes=10'],
    'trivial': ['--model=trivial', '--image_size=8', '--batch_size=2', '--num_classes=10',
                '--weight_decay=0'],
}


def add_emulated(path):
    """Adds a compute profile's emulated model to MODELS (its name: '<model>@emulated');
    returns the name."""
    profile = profile_lib.load(path)
    name = profile.model + '@emulated'
    MODELS[name] = profile.tfhp_args(path)
    return name


# Every job bounds its waits generously: nine processes importing TensorFlow on 2 busy cores
# took 69 s to their sessions. Parameter-server jobs also split variables of 1 MiB and more
# over the ps tasks (PARTITION), so that K ps tasks share the one big vector.
COMMON_ARGS = ['--display_every=1000', '--peer_timeout_s=240']
PARTITION = '--partition_min_bytes=%d' % (1 << 20)
FIGURES = ('global_step_ms', 'images_per_sec', 'dropped_gradients', 'comm_bound_ms',
           'timed_comm_bound_ms', 'ps_sent_mb', 'ps_received_mb', 'worker_sent_mb',
           'worker_received_mb', 'vs_turns', 'vs_timed_bound', 'cores_busy')
# How the saturation study's workers reach the ps tasks (`--saturation_transfers`): variables
# down, then gradients up (parameter_server), or one of distributed_replicated's ps transfers
# (`tfhp.modes.TRANSFERS`, the presets' --ps_transfer): pipelined, each chunk pulled once it
# is applied; pull-clocked, each push leaving once the pull two pushes back is in; background
# pulls, the next forward pass starting on the chunks already back, with a window two chunks
# on the way to the ps at once; priority, the gradients leaving in forward order.
IN_TURN = 'in turn'
PIPELINED = 'pipelined'
PULL_CLOCKED = 'pull-clocked'
BACKGROUND = 'background pulls'
WINDOW = 'background window'
PRIORITY = 'background priority'
TRANSFERS = {IN_TURN: ['--variable_update=parameter_server'],
             PIPELINED: presets.LINKS['pipelined'].args(),
             PULL_CLOCKED: presets.LINKS['pull_clocked'].args(),
             BACKGROUND: presets.LINKS['background'].args(),
             WINDOW: presets.LINKS['background_window'].args(),
             PRIORITY: presets.LINKS['background_priority'].args()}


def _parts(spec):
    """(name, taper, chunk, window, slice) of 'NAME[@[TAPER-]CHUNK[/WINDOW]][+SLICE]'; None for
    a size it does not give (a taper is refused: `transfer_args`)."""
    spec, plus, layer_slice = spec.partition('+')
    name, at, sizes = spec.partition('@')
    chunks, slash, window = sizes.partition('/')
    taper, dash, chunk = chunks.rpartition('-')
    return (name, taper if dash else None, chunk if at else None, window if slash else None,
            layer_slice if plus else None)


def transfer_args(spec):
    """The tfhp flags of a transfer `spec`: a TRANSFERS key, or a chunked one's key and its
    chunk and window sizes, 'NAME@CHUNK[/WINDOW]' in tc sizes (e.g. 'background
    priority@256k/256k': --ps_chunk_bytes=262144 --ps_window_bytes=262144), each size where
    its `tfhp.modes.TRANSFERS` row takes it. A window worth a few milliseconds of the link
    keeps a priority push's wait short, so the best sizes depend on the rate. Any of them may
    end in '+SLICE': the model's dense layers built in slices of at most that size
    (--layer_slice_bytes), so their gradients are made, and their weights used, a slice at a
    time. ('NAME@TAPER-CHUNK', tapered chunks, measured slower and were retired at 52a41b8.)

    Raises:
      ValueError: the spec names no transfer, gives a size its transfer does not take (or a
        taper), or a size that is not one; the message names the spec.
    """
    name, taper, chunk, window, layer_slice = _parts(spec)
    if name not in TRANSFERS:
        raise ValueError('transfer %r: unknown; choose from %s' % (spec, ', '.join(TRANSFERS)))
    if taper is not None:
        raise ValueError('transfer %r: tapered chunks were retired (slower; 52a41b8 has them)'
                         % spec)
    args = list(TRANSFERS[name])
    row = modes.transfer_of(
        modes.strategy(plan.flag_value(args, 'variable_update', modes.DEFAULT_STRATEGY)),
        plan.flag_value(args, 'ps_transfer', ''))
    for size, takes, what in ((chunk, row.chunked, 'chunks'), (window, row.window, 'window')):
        if size is not None and not takes:
            raise ValueError('transfer %r: %r sends no %s to size' % (spec, name, what))
    sizes = (('ps_chunk_bytes', chunk), ('ps_window_bytes', window),
             ('layer_slice_bytes', layer_slice))
    try:
        args.extend('--%s=%d' % (flag, link_config.parse_size(size)) for flag, size in sizes
                    if size is not None)
    except ValueError as e:
        raise ValueError('transfer %r: %s' % (spec, e)) from None
    return args


def check_transfers(flag, specs):
    """Raises app.UsageError naming --flag and the spec unless each of `specs` is one
    (`transfer_args`)."""
    for spec in specs:
        try:
            transfer_args(spec)
        except ValueError as e:
            raise app.UsageError('--%s: %s' % (flag, e)) from None


def transfer_label(spec):
    """A transfer spec (`transfer_args`) as a figure names it: 'NAME, [TAPER-]CHUNK chunks,
    WINDOW window, SLICE layer slices'."""
    name, taper, chunk, window, layer_slice = _parts(spec)
    chunks = chunk if taper is None else '%s-%s' % (taper, chunk)
    return ', '.join([name] + (['%s chunks' % chunks] if chunk is not None else []) +
                     (['%s window' % window] if window is not None else []) +
                     (['%s layer slices' % layer_slice] if layer_slice is not None else []))


def job_args(model, steps, warmup_steps, extra=()):
    """The tfhp flags of a job of `model` (a MODELS key) with its timed and warm-up steps;
    `extra` may name another --variable_update (default parameter_server, partitioned)."""
    update = plan.flag_value(extra, 'variable_update', modes.DEFAULT_STRATEGY)
    ps = modes.strategy(update).partitions
    return (MODELS[model] + COMMON_ARGS + ([PARTITION] if ps else []) +
            ['--num_batches=%d' % steps, '--num_warmup_batches=%d' % warmup_steps] +
            list(extra))


def _wire_ratios(tfhp_args):
    """Bytes a gradient element and a variable element put on the wire over their float32
    bytes, for the flags' schemes (--gradient_compression, --downlink_compression, at
    --compression_fraction where they take one)."""
    replication = config_lib.ReplicationConfig(
        gradient_compression=plan.flag_value(tfhp_args, 'gradient_compression', compression.NONE),
        gradient_transfer_dtype=plan.flag_value(tfhp_args, 'gradient_transfer_dtype', 'float32'))
    schemes = (replication.compression,
               plan.flag_value(tfhp_args, 'downlink_compression', compression.NONE))
    fraction = plan.flag_value(tfhp_args, 'compression_fraction', None)
    fraction = float(fraction) if fraction else None
    compressors = [compression.get(s, compression.fraction_for(s, fraction)) for s in schemes]
    return [c.wire_ratio if c else 1.0 for c in compressors]


def expected(chief, num_ps, num_workers, rates, tfhp_args, colocated_ps=False):
    """{'model_mb', 'bound_ms', 'turns_ms'} of a job from its chief's result (module doc);
    colocated_ps: ps task k shared worker k's host and NIC."""
    update = plan.flag_value(tfhp_args, 'variable_update', modes.DEFAULT_STRATEGY)
    if 'num_params' not in chief or not link_bound.has_traffic_model(update):
        return {}
    model_bytes = 4.0 * chief['num_params']
    ps_bytes = None
    if num_ps and not modes.strategy(update).worker_all_reduce:
        ps_bytes = link_bound.ps_task_bytes(chief.get('variable_bytes_by_device', {}), num_ps)
        if not sum(ps_bytes):  # distributed_replicated's masters are not trainable variables
            ps_bytes = [model_bytes / num_ps] * num_ps
    traffic = link_bound.expected_traffic(update, num_workers, model_bytes, ps_bytes,
                                          *_wire_ratios(tfhp_args),
                                          colocated=bool(ps_bytes) and colocated_ps)
    figures = {'model_mb': model_bytes / 1e6}
    if rates:
        figures['bound_ms'] = max(link_bound.bound_ms(traffic, rates)[0].values())
        sync = plan.flag_value(tfhp_args, 'cross_replica_sync', 'true') != 'false'
        if ps_bytes and sync:
            figures['turns_ms'] = link_bound.turns_ms(traffic, rates)
    return figures


def figures(summary, results, num_ps, num_workers, tfhp_args, colocated_ps=False):
    """The record's figures (module doc) from a job's summary and results."""
    record = {k: v for k, v in common.cluster_figures(summary).items() if v is not None}
    rate = record.pop('global_steps_per_sec', None)
    if rate:
        record['global_step_ms'] = 1000.0 / rate
    links = common.link_figures(summary)
    record.update({k: links[k] for k in ('comm_bound_ms', 'timed_comm_bound_ms')
                   if links.get(k) is not None})
    busy = summary.get('cpu', {}).get('busy_timed')
    if busy is not None:  # at CPU_BOUND or more the cores, not the links, set the step
        record['cores_busy'] = busy
    moved = links.get('link_bytes', {})
    for job, pick in (('ps', max), ('worker', statistics.mean)):
        tasks = [v for name, v in moved.items() if name.startswith(job + ' ')]
        if tasks:
            record[job + '_sent_mb'] = pick(s for s, _ in tasks) / 1e6
            record[job + '_received_mb'] = pick(r for _, r in tasks) / 1e6
    record.update(expected(results.get(('worker', 0), {}), num_ps, num_workers,
                           links.get('link_bps'), tfhp_args, colocated_ps))
    for bound, ratio in (('turns_ms', 'vs_turns'), ('timed_comm_bound_ms', 'vs_timed_bound')):
        if record.get(bound) and record.get('global_step_ms'):
            record[ratio] = record['global_step_ms'] / record[bound]
    return record


def measure(labels, num_ps, num_workers, tfhp_args, rate, seed, ps_rate=None,
            timeout_s=1200.0, link_options=None, colocate_ps=False):
    """Runs one job with seed on links of `rate` ('loopback': none) that behave as
    `link_options` says (None: `link_config.LinkOptions()`), ps task k on worker k's host with
    colocate_ps; returns its record."""
    args = list(tfhp_args) + ['--tf_random_seed=%d' % seed]
    shaped = rate != 'loopback'
    link_options = link_options or link_config.LinkOptions()
    run = common.run_cluster(num_ps, num_workers, args, timeout_s=timeout_s,
                             link_bandwidth=rate if shaped else None,
                             ps_link_bandwidth=ps_rate if shaped else None,
                             link_options=link_options, colocate_ps=colocate_ps)
    record = dict(labels, rate=rate, num_ps=num_ps, num_workers=num_workers, seed=seed,
                  status=run.summary['status'], job=run.summary)
    if colocate_ps:
        record['colocated_ps'] = True
    if shaped:
        record.update(link_flags.record(link_options))
    if run.error:
        record['error'] = run.error
    record.update(figures(run.summary, run.results, num_ps, num_workers, args, colocate_ps))
    return record

"""All-reduce microbenchmark: bytes/sec of each algorithm vs tensor size, next to memcpy.

For each device count and tensor size (float32, 1 KB to 64 MB by default) every algorithm
all-reduces one variable-resident tensor per device; after one warm-up run of every op, each op
is run (one element of each output fetched) once per round for --repeats rounds over all the
points (a slow spell of the machine hits them alike), and each time t gives
  algbw = S / t                       (bytes of one tensor per second)
  busbw = 2 (N - 1) / N * S / t       (what a ring moves per device: comparable across N)
reported as median [min-max] over the repeats (experiments/stats.py), '*' marking a range apart
from `pscpu`'s at the same size and N. No op here is random: the repeats are timings of the one
graph, so no seed varies. The machine's memcpy bandwidth (numpy copy of a --memcpy_bytes buffer)
is measured in the same run, and so is the floor: a `session.run` of a no-op, which every point
includes. On virtual CPU devices a cross-device "copy" hands over the buffer without copying, so
the figures measure the adds, the splitting and the scheduling, with memcpy as the yardstick.

  python -m experiments.allreduce_bench --plot=allreduce.png      # full figures
  python -m experiments.allreduce_bench --devices=2 --sizes=1k,64k --repeats=2
"""
import time

from absl import flags
import numpy as np
import tensorflow.compat.v1 as tf

from experiments import frame
from experiments import stats
from tfhp import compat
from tfhp.runner import devices as devices_lib
from tfhp import plots
from tfhp import provenance
from tfhp import session as session_lib
from tfhp.ops import allreduce
from tfhp.ops import allreduce_builder
from tfhp.ops import ring

FLAGS = flags.FLAGS


def define_flags():
    """Defines the study's own flags (the common ones are the frame's).

    Called only when run as a script: importing the module (e.g. from tests, beside other
    experiments that define flags of the same names) defines none.
    """
    flags.DEFINE_list('algorithms', ['pscpu', 'psgpu', 'xring', 'xring#2', 'hierarchical',
                                     'collective', 'nccl'],
                      'Spec names (see tfhp.ops.allreduce_builder) or "hierarchical" (copy within '
                      'halves, ring across); nccl runs only where there are GPUs.')
    flags.DEFINE_list('devices', ['2', '4'], 'Device counts.')
    flags.DEFINE_list('sizes', ['1k', '4k', '16k', '64k', '256k', '1m', '4m', '16m', '64m'],
                      'Tensor sizes in bytes (k = 1024, m = 1024k).')
    flags.DEFINE_string('memcpy_bytes', '64m', 'Buffer size of the memcpy measurement.')


def parse_bytes(text):
    """'64k' -> 65536."""
    units = {'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}
    text = text.strip().lower()
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def memcpy_bytes_per_sec(num_bytes, repeats):
    """Bandwidth of numpy copying a num_bytes buffer into another: a summary of the repeats."""
    src = np.ones(num_bytes // 4, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    times = []
    for _ in range(max(repeats, 3)):
        start = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - start)
    return stats.summarise([num_bytes / t for t in times])


def _seconds(sess, op):
    start = time.perf_counter()
    sess.run(op)
    return time.perf_counter() - start


def _algorithm(name, devices):
    if name == 'hierarchical':
        return allreduce.Hierarchical(allreduce.CopyToDevice(), ring.Ring(),
                                      group_size=(len(devices) + 1) // 2)
    return allreduce_builder.from_spec(name, devices, '/cpu:0')


def measure(algorithms, num_devices, sizes, repeats):
    """Median all-reduce time of each (algorithm, size) on num_devices devices; JSON records."""
    kind = 'gpu' if devices_lib.num_gpus() >= num_devices else 'cpu'
    devices = ['/%s:%d' % (kind, i) for i in range(num_devices)]
    runnable = [a for a in algorithms if a != 'nccl' or kind == 'gpu']
    graph = tf.Graph()
    with graph.as_default():
        points = []
        for size in sizes:
            inputs = []
            for d, device in enumerate(devices):
                with tf.device(device):
                    inputs.append(tf.Variable(tf.fill([size // 4], float(d + 1)),
                                              name='input_%d_%d' % (size, d)).read_value())
            for name in runnable:
                outputs = _algorithm(name, devices)(inputs, devices)
                # Fetch one element of every output: an op run only for its control edge
                # is stateless and grappler turns it into a NoOp, which would time nothing.
                firsts = []
                for device, output in zip(devices, outputs):
                    with tf.device(device):
                        firsts.append(output[0])
                points.append((name, size, tf.add_n(firsts)))
        init = tf.global_variables_initializer()
        no_op = tf.no_op()
    graph.finalize()
    proto = session_lib.config_proto(num_cpu_devices=num_devices if kind == 'cpu' else 1)
    with tf.Session(graph=graph, config=proto) as sess:
        sess.run(init)
        for op in [no_op] + [op for _, _, op in points]:
            sess.run(op)  # warm-up: builds the executor, allocates
        times = [[] for _ in range(len(points) + 1)]
        for _ in range(repeats):
            for op, op_times in zip([no_op] + [op for _, _, op in points], times):
                op_times.append(_seconds(sess, op))
    floor = stats.summarise(times[0])['median']
    records = []
    for (name, size, _), seconds in zip(points, times[1:]):
        records.append({'study': 'allreduce', 'algorithm': name, 'device': kind,
                        'num_devices': num_devices, 'bytes': size,
                        'seconds': stats.summarise(seconds),
                        'session_run_floor_seconds': floor,
                        'algbw_bytes_per_sec': stats.summarise([size / t for t in seconds]),
                        'busbw_bytes_per_sec': stats.summarise(
                            [2.0 * (num_devices - 1) / num_devices * size / t
                             for t in seconds])})
    return records


REFERENCE = 'pscpu'
FIGURES = ('seconds', 'algbw_bytes_per_sec', 'busbw_bytes_per_sec')


def mark(records):
    """Marks every record against the reference algorithm's at the same N and size."""
    for key in {(r['num_devices'], r['bytes']) for r in records}:
        group = [r for r in records if (r['num_devices'], r['bytes']) == key]
        reference = next((r for r in group if r['algorithm'] == REFERENCE), None)
        if reference:
            stats.mark(group, reference, FIGURES)
    return records


def _size_label(num_bytes):
    for unit, name in ((1 << 20, 'MiB'), (1 << 10, 'KiB')):
        if num_bytes >= unit:
            return '%g %s' % (num_bytes / unit, name)
    return '%d B' % num_bytes


def plot(records, memcpy, path):
    """Bus bandwidth vs size, log-log, a panel per device count, memcpy drawn across."""
    panels = []
    for n in sorted({r['num_devices'] for r in records}):
        rows = [r for r in records if r['num_devices'] == n]
        algorithms = sorted({r['algorithm'] for r in rows})
        series = [(a, [r['bytes'] for r in rows if r['algorithm'] == a],
                   [stats.scaled(r['busbw_bytes_per_sec'], 1e-9) for r in rows
                    if r['algorithm'] == a]) for a in algorithms]
        panels.append(('N = %d devices (%s)' % (n, rows[0]['device']), series,
                       [(memcpy['median'] * 1e-9, 'numpy memcpy, %.2f GB/s'
                         % (memcpy['median'] * 1e-9))]))
    sizes = sorted({r['bytes'] for r in records})
    plots.line_panels(path, panels, 'tensor size per device',
                      'bus bandwidth 2(N-1)/N S/t, GB/s', logx=True, logy=True,
                      title='all-reduce bus bandwidth, %s; t includes '
                      'one session.run (a no-op takes %.0f us)' % (
                          plots.spread_text(records[0]['seconds']['n'], 'runs'),
                          records[0]['session_run_floor_seconds'] * 1e6),
                      xticks=[(s, _size_label(s)) for s in sizes], sharey=True,
                      caption=provenance.caption())


TABLE = [('algorithm', 'algorithm', None), ('N', 'num_devices', '%d'), ('bytes', 'bytes', '%d'),
         ('time us', 'seconds', '%.1f', 1e6), ('busbw GB/s', 'busbw_bytes_per_sec', '%.3f', 1e-9)]


def study():
    """Every algorithm at every size on every device count, timed and reported."""
    compat.enable_graph_mode()
    sizes = [parse_bytes(s) for s in FLAGS.sizes]
    memcpy = memcpy_bytes_per_sec(parse_bytes(FLAGS.memcpy_bytes), FLAGS.repeats)
    records = []
    for n in (int(d) for d in FLAGS.devices):
        records.extend(measure(FLAGS.algorithms, n, sizes, FLAGS.repeats))
    print('memcpy: %s GB/s (%s buffer); session.run floor: %.1f us' % (
        stats.cell(memcpy, '%.2f', scale=1e-9), FLAGS.memcpy_bytes,
        records[0]['session_run_floor_seconds'] * 1e6))
    for r in mark(records):
        r['memcpy_bytes_per_sec'] = memcpy
    frame.report(records, TABLE, '%s at the same N and size' % REFERENCE,
                 lambda rows, path: plot(rows, memcpy, path))


if __name__ == '__main__':
    define_flags()
    # The repeats are timings of one graph, in rounds over the points: no seed varies.
    frame.main(study, repeats=10, seed=None, plot='bus bandwidth vs size, memcpy drawn')

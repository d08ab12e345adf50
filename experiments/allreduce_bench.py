"""All-reduce microbenchmark: bytes/sec of each algorithm vs tensor size, next to memcpy.

For each device count and tensor size (float32, 1 KB to 64 MB by default) every algorithm
all-reduces one variable-resident tensor per device; the op is run (outputs kept on the devices,
nothing fetched) `repeats` times after a warm-up, and the median time t gives
  algbw = S / t                       (bytes of one tensor per second)
  busbw = 2 (N - 1) / N * S / t       (what a ring moves per device: comparable across N)
The machine's memcpy bandwidth (numpy copy of a --memcpy_bytes buffer) is measured in the same
run, and so is the floor: the median time of a `session.run` of a no-op, which every point
includes. On virtual CPU devices a cross-device "copy" hands over the buffer without copying, so the
figures measure the adds, the splitting and the scheduling, with memcpy as the yardstick.

  python -m experiments.allreduce_bench                           # full figures
  python -m experiments.allreduce_bench --devices=2 --sizes=1k,64k --repeats=2
"""
import statistics
import time

from absl import app
from absl import flags
import numpy as np
import tensorflow.compat.v1 as tf

from experiments import common
from tfhp import compat
from tfhp import devices as devices_lib
from tfhp import session as session_lib
from tfhp.ops import allreduce
from tfhp.ops import allreduce_builder
from tfhp.ops import ring

FLAGS = flags.FLAGS


def define_flags():
    """Defines the script's flags.

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
    flags.DEFINE_integer('repeats', 10, 'Timed runs per point (the median is reported).')
    flags.DEFINE_string('memcpy_bytes', '64m', 'Buffer size of the memcpy measurement.')
    flags.DEFINE_string('result_file', None, 'Append JSON lines here.')


def parse_bytes(text):
    """'64k' -> 65536."""
    units = {'k': 1 << 10, 'm': 1 << 20, 'g': 1 << 30}
    text = text.strip().lower()
    return int(text[:-1]) * units[text[-1]] if text[-1] in units else int(text)


def memcpy_bytes_per_sec(num_bytes, repeats):
    """Median bandwidth of numpy copying a num_bytes buffer into another."""
    src = np.ones(num_bytes // 4, np.float32)
    dst = np.empty_like(src)
    np.copyto(dst, src)
    times = []
    for _ in range(max(repeats, 3)):
        start = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - start)
    return num_bytes / statistics.median(times)


def _median_run_seconds(sess, op, repeats):
    sess.run(op)  # warm-up: builds the executor, allocates
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        sess.run(op)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


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
    records = []
    with tf.Session(graph=graph, config=proto) as sess:
        sess.run(init)
        floor = _median_run_seconds(sess, no_op, repeats)
        for name, size, op in points:
            seconds = _median_run_seconds(sess, op, repeats)
            records.append({'study': 'allreduce', 'algorithm': name, 'device': kind,
                            'num_devices': num_devices, 'bytes': size, 'seconds_p50': seconds,
                            'session_run_floor_seconds': floor,
                            'algbw_bytes_per_sec': size / seconds,
                            'busbw_bytes_per_sec': 2.0 * (num_devices - 1) / num_devices *
                                                   size / seconds})
    return records


def main(_):
    compat.enable_graph_mode()
    sizes = [parse_bytes(s) for s in FLAGS.sizes]
    memcpy = memcpy_bytes_per_sec(parse_bytes(FLAGS.memcpy_bytes), FLAGS.repeats)
    records = []
    for n in (int(d) for d in FLAGS.devices):
        records.extend(measure(FLAGS.algorithms, n, sizes, FLAGS.repeats))
    print('memcpy: %.2f GB/s (%s buffer); session.run floor: %.1f us' % (
        memcpy / 1e9, FLAGS.memcpy_bytes, records[0]['session_run_floor_seconds'] * 1e6))
    print('%-13s %3s %10s %12s %12s %12s' % ('algorithm', 'N', 'bytes', 'time us',
                                             'algbw GB/s', 'busbw GB/s'))
    for r in records:
        r['memcpy_bytes_per_sec'] = memcpy
        print('%-13s %3d %10d %12.1f %12.3f %12.3f' % (
            r['algorithm'], r['num_devices'], r['bytes'], r['seconds_p50'] * 1e6,
            r['algbw_bytes_per_sec'] / 1e9, r['busbw_bytes_per_sec'] / 1e9))
    common.write_records(records, FLAGS.result_file)


if __name__ == '__main__':
    define_flags()
    app.run(main)

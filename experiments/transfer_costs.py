"""What TensorFlow's gRPC runtime costs per transfer between two tasks: CPU, not bytes.

A ps task (a child process) and a worker (this process) on 127.0.0.1, no emulated link (unless
--link_rate, below), so every figure is the runtime's own work. Each probe is one
`session.run` that moves tensors between the two tasks; its CPU is both processes' (utime +
stime from /proc), per run:
  local        N scalar ops on the ps, their sum fetched: one transfer (the baseline)
  concurrent   N scalars made on the ps and summed on the worker: N transfers at once
  sequential   a chain of N scalar transfers, ps -> worker -> ps ..., each waiting for the one
               before (as a pipelined protocol's push, its receipt and its pull do)
  chunks       N variables of --chunk_bytes on the ps, each copied into one on the worker,
               all at once (a pull of N chunks)
  whole        one variable of N x --chunk_bytes copied the same way (the same bytes, one
               transfer)
Figures: per transfer, (probe - local) / N; per MB (chunks, whole), (probe - local) / MB. Each
probe runs --steps times after --warmup_steps, in rounds over the probes (--repeats), reported
as median [min-max]. With --link_rate the two tasks sit on emulated links of that rate
(`tfhp.launcher.links`; the study runs itself again inside the worker's namespace), so the
figures hold what the kernel and gRPC do per packet too (gRPC's batched reads, which took a
third of the CPU per MB at 100 Mbit/s but shortened no step where the cores were busy, were
retired: 52a41b8 measures them). On the machines of docs/results.md a transfer that
waits for the one before costs several times one sent beside others: each wakes the threads
on both sides (TensorFlow's executor, gRPC's event engine) from idle, and on two cores of a VM
a wake-up is dear.

  python -m experiments.transfer_costs                        # 64 transfers, 128 KiB chunks
  python -m experiments.transfer_costs --transfers=128 --chunk_bytes=32768 --repeats=5
  python -m experiments.transfer_costs --link_rate=100mbit --transfers=16 --steps=3 \
      --chunk_bytes=1048576                                     # root: emulated links
"""
import functools
import os
import resource
import subprocess
import sys
import time

from absl import flags
import tensorflow.compat.v1 as tf

from experiments import common
from experiments import frame
from tfhp import compat
from tfhp.launcher import link_config
from tfhp.launcher import links
from tfhp.launcher import plan

FLAGS = flags.FLAGS
PS_DEVICE = '/job:ps/task:0/device:CPU:0'
WORKER_DEVICE = '/job:worker/task:0/device:CPU:0'
PROBES = ('local', 'concurrent', 'sequential', 'chunks', 'whole')
FIGURES = ('wall_ms', 'cpu_ms', 'cpu_ms_per_transfer', 'cpu_ms_per_mb')
TABLE = [('probe', 'probe', None), ('transfers', 'transfers', '%d'),
         ('wall ms/run', 'wall_ms', '%.2f'), ('CPU ms/run', 'cpu_ms', '%.2f'),
         ('CPU ms/transfer', 'cpu_ms_per_transfer', '%.3f'),
         ('CPU ms/MB', 'cpu_ms_per_mb', '%.2f')]
# Bound on the ps child's start and on each probe run, so that a broken run ends the study.
_TIMEOUT_S = 60.0

_PS_CHILD = r'''
import sys
import tensorflow.compat.v1 as tf
cluster = tf.train.ClusterSpec({"ps": [sys.argv[1]], "worker": [sys.argv[2]]})
server = tf.train.Server(cluster, job_name="ps", task_index=0)
print("serving", flush=True)
sys.stdin.read()  # until the study closes the pipe: a study that dies takes its ps along
'''


def define_flags():
    """The study's own flags (the common ones are the frame's)."""
    flags.DEFINE_integer('transfers', 64, 'N: transfers of each probe.')
    flags.DEFINE_integer('chunk_bytes', 128 << 10, 'Bytes of each chunk (a multiple of 4).')
    flags.DEFINE_string('link_rate', None, 'Emulated links of this rate (tc units, e.g. 1gbit; '
                        'needs root); none: loopback.')
    flags.DEFINE_string('emulated_hosts', None, 'Internal: ps address, worker address and the '
                        'ps namespace, when the study runs inside the worker\'s namespace.')


def build_probes(num, chunk_floats, ps_device=PS_DEVICE, worker_device=WORKER_DEVICE):
    """The probes of the module doc in the default graph: {name: (op, transfers, bytes)}."""
    probes = {}
    with tf.device(ps_device):
        scalars = [tf.random.uniform([]) + i for i in range(num)]
        probes['local'] = (tf.add_n(scalars), 1, 0)
    with tf.device(worker_device):
        probes['concurrent'] = (tf.add_n([s * 2.0 for s in scalars]), num, 0)
        link = tf.random.uniform([])
    for i in range(num):
        with tf.device(ps_device if i % 2 == 0 else worker_device):
            link = link + 1.0
    probes['sequential'] = (link, num, 0)

    def pull(name, shape):
        with tf.device(ps_device):
            master = tf.get_variable(name, shape, initializer=tf.zeros_initializer(),
                                     use_resource=True)
        with tf.device(worker_device):
            copy = tf.get_variable(name + '_copy', shape, initializer=tf.zeros_initializer(),
                                   use_resource=True)
            return copy.assign(master.read_value(), read_value=False)
    chunk_bytes = 4 * chunk_floats
    probes['chunks'] = (tf.group(*[pull('chunk%d' % i, [chunk_floats]) for i in range(num)]),
                        num, num * chunk_bytes)
    probes['whole'] = (pull('whole', [num * chunk_floats]), 1, num * chunk_bytes)
    return probes


def _cpu_s(pid):
    """utime + stime of process `pid` so far, in seconds."""
    fields = open('/proc/%d/stat' % pid).read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def _own_cpu_s():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class _Pair:
    """The ps child, this process's worker server, a session and the probes.

    Args:
      num, chunk_bytes: the probes' N and chunk size.
      emulated: (ps address, worker address, the ps's namespace) on emulated links; None:
        two free ports of 127.0.0.1.
    """

    def __init__(self, num, chunk_bytes, emulated=None):
        if emulated:
            ps, worker, namespace = emulated
            prefix = ['ip', 'netns', 'exec', namespace]
        else:
            ps, worker = ('127.0.0.1:%d' % port for port in plan.free_ports(2))
            prefix = []
        env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2')
        self.child = subprocess.Popen(prefix + [sys.executable, '-c', _PS_CHILD, ps, worker],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                      text=True)
        if self.child.stdout.readline().strip() != 'serving':
            raise RuntimeError('the ps child did not start (exit status %s)' % self.child.poll())
        cluster = tf.train.ClusterSpec({'ps': [ps], 'worker': [worker]})
        server = tf.train.Server(cluster, job_name='worker', task_index=0)
        graph = tf.Graph()
        with graph.as_default():
            self.probes = build_probes(num, chunk_bytes // 4)
            init = tf.global_variables_initializer()
        self.session = tf.Session(server.target, graph=graph)
        self.options = tf.RunOptions(timeout_in_ms=int(_TIMEOUT_S * 1000))
        self.session.run(init, options=self.options)

    def measure(self, probe, runs, warmup):
        """(wall s, CPU s of both tasks) per run of `probe`."""
        op = self.probes[probe][0]
        for _ in range(warmup):
            self.session.run(op, options=self.options)
        cpu, start = _own_cpu_s() + _cpu_s(self.child.pid), time.perf_counter()
        for _ in range(runs):
            self.session.run(op, options=self.options)
        wall = time.perf_counter() - start
        return wall / runs, (_own_cpu_s() + _cpu_s(self.child.pid) - cpu) / runs


@functools.lru_cache(maxsize=None)
def _pair(num, chunk_bytes, emulated):
    return _Pair(num, chunk_bytes, emulated and tuple(emulated.split(',')))


def measure(probe, seed):
    """One probe's record, its CPU taken beside the baseline (`local`) of the same round."""
    del seed  # the repeats are timings of one graph: nothing varies by seed
    pair = _pair(FLAGS.transfers, FLAGS.chunk_bytes, FLAGS.emulated_hosts)
    wall_s, cpu_s = pair.measure(probe, FLAGS.steps, FLAGS.warmup_steps)
    _, base_s = pair.measure('local', FLAGS.steps, FLAGS.warmup_steps)
    _, transfers, num_bytes = pair.probes[probe]
    extra_ms = 1000.0 * (cpu_s - base_s)
    return {'study': 'transfer_costs', 'probe': probe, 'transfers': transfers,
            'chunk_bytes': FLAGS.chunk_bytes, 'bytes': num_bytes,
            'link_rate': FLAGS.link_rate or 'loopback',
            'wall_ms': 1000.0 * wall_s,
            'cpu_ms': 1000.0 * cpu_s,
            'cpu_ms_per_transfer': (extra_ms / transfers if transfers > 1 and not num_bytes
                                    else None),
            'cpu_ms_per_mb': extra_ms / (num_bytes / 1e6) if num_bytes else None}


def study():
    """Every probe, --repeats times in rounds."""
    errors = [why for why in (FLAGS.transfers < 2 and '--transfers must be >= 2',
                              (FLAGS.chunk_bytes <= 0 or FLAGS.chunk_bytes % 4) and
                              '--chunk_bytes must be a positive multiple of 4') if why]
    if errors:
        raise SystemExit('transfer_costs: ' + '; '.join(errors))
    if FLAGS.link_rate and not FLAGS.emulated_hosts:
        return _inside_emulated_links()
    if not FLAGS.emulated_hosts:  # on loopback: the ps child is started from here
        common.own_network('transfer_costs')
    compat.enable_graph_mode()
    try:
        records = common.repeat_in_rounds([functools.partial(measure, p) for p in PROBES],
                                          FLAGS.repeats, 0, FIGURES)
    finally:
        if _pair.cache_info().currsize:
            pair = _pair(FLAGS.transfers, FLAGS.chunk_bytes, FLAGS.emulated_hosts)
            pair.session.close()
            pair.child.stdin.close()
            pair.child.wait(timeout=_TIMEOUT_S)
    for record in records:  # a figure that does not apply to a probe: '-', not a summary
        for key in FIGURES:
            if all(v is None for v in record[key]['values']):
                record[key] = None
    frame.report(records, TABLE)


def _inside_emulated_links():
    """Runs this study again in the worker's namespace of a two-task emulated network, the ps
    child in the ps's; returns its exit status."""
    ps, worker = ('ps', 0), ('worker', 0)
    with links.EmulatedNetwork([ps, worker], link_config.parse_rate(FLAGS.link_rate)) as network:
        hosts = '%s,%s,%s' % (network.hosts('ps')[0], network.hosts('worker')[0],
                              network.namespace(ps))
        argv = [sys.executable, '-m', 'experiments.transfer_costs'] + sys.argv[1:] + [
            '--emulated_hosts=' + hosts]
        return subprocess.run(network.command(worker, argv)).returncode


if __name__ == '__main__':
    define_flags()
    frame.main(study, steps=30, warmup_steps=3, repeats=3, seed=None)

"""Parameter-server count vs throughput for a model dominated by a large softmax: full vs sampled.

The model: token id -> embedding (vocab x dim) -> one relu layer (dim x dim) -> softmax over the
vocabulary (vocab x dim weights and a bias). At the default vocabulary of 50,000 and dim 128
the two vocab x dim matrices hold 99.6% of the parameters. Both are cut into one slice per ps
task (a fixed-size partitioner) and the slices spread over the ps tasks (greedy by bytes).

  full     logits over the whole vocabulary: every step reads the whole softmax matrix from
           the ps tasks and sends back a dense gradient of it, one per replica
  sampled  `tf.nn.sampled_softmax_loss` over --num_sampled classes plus the labels: a step reads
           and updates only those rows (sparse IndexedSlices gradients), as the embedding does

Each configuration (ps count x softmax) runs in its own process holding an in-process gRPC
cluster (`tf.train.Server`s on loopback): --num_workers worker tasks and the ps tasks. One
client drives a replica per worker task, each in its own thread and applying its own gradients
(asynchronous, as between-graph workers do; `tfhp.runner.async_runner`). Reported: tokens/sec
over all replicas, step time, the loss before and after, and the bytes each ps task holds. Every
configuration runs --repeats times (seeds --seed + r: the data and the initial
weights), in rounds; figures are median [min-max] over the repeats, '*' marking a range apart
from the same softmax on the fewest ps tasks (experiments/stats.py).

  python -m experiments.softmax_ps                       # 1, 2, 4 ps x full, sampled
  python -m experiments.softmax_ps --num_ps=1,2,4,8 --vocab_size=200000 --result_file=s.jsonl
"""
import dataclasses
import functools
import json
import os
import sys

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import flags  # pylint: disable=g-import-not-at-top
import numpy as np
import tensorflow.compat.v1 as tf

from experiments import common
from experiments import frame
from experiments import stats
from tfhp.runner import async_runner
from tfhp import compat
from tfhp import config as config_lib
from tfhp.launcher import plan
from tfhp import session as session_lib
from tfhp import topology as topology_lib
from tfhp.cluster import servers as servers_lib
from tfhp.pipelines import constant
from tfhp.replication import async_replicas
from tfhp.replication import parameter_server

SOFTMAXES = ('full', 'sampled')
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Options:
    """The model and run of every configuration (the script's flags)."""
    vocab_size: int = 50000
    dim: int = 128
    batch_size: int = 64
    num_sampled: int = 64
    num_workers: int = 2
    num_steps: int = 20
    num_warmup: int = 3
    learning_rate: float = 0.5


def model_fn_for(softmax, options, num_ps):
    """model_fn(ids, labels) -> (loss, logits) of the module docstring's model."""
    partitioner = tf.fixed_size_partitioner(num_ps)

    def model_fn(ids, labels):
        v, d = options.vocab_size, options.dim
        init = tf.random_normal_initializer(stddev=0.05)
        embedding = tf.get_variable('embedding', [v, d], initializer=init,
                                    partitioner=partitioner)
        hidden_w = tf.get_variable('hidden/weights', [d, d], initializer=init)
        softmax_w = tf.get_variable('softmax/weights', [v, d], initializer=init,
                                    partitioner=partitioner)
        softmax_b = tf.get_variable('softmax/biases', [v], initializer=tf.zeros_initializer())
        hidden = tf.nn.relu(tf.matmul(tf.nn.embedding_lookup(embedding, ids), hidden_w))
        # Full logits: the loss of `full`; for `sampled` only top-1/top-5 read them, and the
        # train op does not, so they are never computed there.
        logits = tf.nn.bias_add(tf.matmul(hidden, tf.concat(list(softmax_w), 0),
                                          transpose_b=True), softmax_b)
        if softmax == 'full':
            loss = tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
        else:
            loss = tf.nn.sampled_softmax_loss(
                list(softmax_w), softmax_b, tf.reshape(tf.cast(labels, tf.int64), [-1, 1]),
                hidden, options.num_sampled, v)
        return tf.reduce_mean(loss), logits
    return model_fn


def local_cluster(num_workers, num_ps):
    """Starts every task's server in this process on free loopback ports.

    Returns:
      (the ClusterConfig of worker 0, its server); the other servers live as long as the
      process (TensorFlow cannot stop a server).
    """
    hosts = ['127.0.0.1:%d' % p for p in plan.free_ports(num_workers + num_ps)]
    tasks = [('worker', i) for i in range(num_workers)] + [('ps', i) for i in range(num_ps)]
    configs = [config_lib.ClusterConfig(job_name=job, task_index=index,
                                        worker_hosts=tuple(hosts[:num_workers]),
                                        ps_hosts=tuple(hosts[num_workers:]))
               for job, index in tasks]
    servers = [servers_lib.start_server(c, session_lib.config_proto()) for c in configs]
    return configs[0], servers[0]


def measure(num_ps, softmax, options, seed=1234):
    """Trains one configuration in an in-process cluster; returns its JSON record."""
    cluster, server = local_cluster(options.num_workers, num_ps)
    topology = topology_lib.Topology.in_graph(cluster.jobs(), 'worker', 0)
    rng = np.random.RandomState(seed)
    ids = rng.randint(0, options.vocab_size, options.batch_size).astype(np.int32)
    labels = rng.randint(0, options.vocab_size, options.batch_size).astype(np.int32)
    with tf.Graph().as_default() as graph:
        tf.set_random_seed(seed)
        with tf.device(topology.variable_devices[0]):
            tf.train.get_or_create_global_step()
        placement = parameter_server.ParameterServer(topology.tower_devices,
                                                     topology.variable_devices)
        manager = async_replicas.AsyncReplicas(placement, topology.input_device)
        ops, train_ops = async_runner.build_replica_steps(
            constant.ConstantPipeline(ids, labels), model_fn_for(softmax, options, num_ps),
            manager, lambda: tf.train.GradientDescentOptimizer(options.learning_rate), topology)
        init = tf.group(tf.global_variables_initializer(), tf.local_variables_initializer())
    with tf.Session(server.target, graph=graph, config=session_lib.config_proto()) as sess:
        sess.run(init)
        loss_before = float(sess.run(ops.loss))
        times, _ = async_runner.run_replicas(sess, train_ops, options.num_steps,
                                             options.batch_size, num_warmup=options.num_warmup)
        loss_after = float(sess.run(ops.loss))
    return dict(dataclasses.asdict(options), study='softmax_ps', num_ps=num_ps, softmax=softmax,
                tokens_per_sec=times.images_per_sec, step_time_ms=times.step_time_ms()['p50'],
                loss_before=loss_before, loss_after=loss_after, seed=seed,
                ps_bytes=list(placement.placer.loads))


FIGURES = ('tokens_per_sec', 'step_time_ms', 'loss_before', 'loss_after')


def run_child(num_ps, softmax, options, timeout_s, seed):
    """One configuration in a child process; a failure is recorded with its error."""
    option_flags = ['--%s=%s' % item for item in dataclasses.asdict(options).items()]
    record, error = common.run_child(
        'experiments.softmax_ps', ['--child=%d:%s' % (num_ps, softmax),
                                   '--seed=%d' % seed] + option_flags, timeout_s)
    return record or {'study': 'softmax_ps', 'num_ps': num_ps, 'softmax': softmax,
                      'seed': seed, 'error': error}


def rows(num_ps_list, options, timeout_s):
    """Measurements (seed -> record) of every configuration, each in a child process."""
    return [functools.partial(run_child, n, s, options, timeout_s)
            for n in num_ps_list for s in SOFTMAXES]


def mark(records):
    """Marks each softmax's rows against the same softmax on the fewest ps tasks."""
    for softmax in SOFTMAXES:
        group = [r for r in records if r['softmax'] == softmax]
        stats.mark(group, min(group, key=lambda r: r['num_ps']), FIGURES)
    return records


TABLE = [('ps', 'num_ps', '%d'), ('softmax', 'softmax', None),
         ('tokens/s', 'tokens_per_sec', '%.1f'), ('step ms', 'step_time_ms', '%.2f'),
         ('loss before', 'loss_before', '%.3f'), ('loss after', 'loss_after', '%.3f'),
         ('bytes per ps', 'ps_bytes', None), ('not run', 'error', None)]


def study():
    """Every configuration --repeats times, in rounds, reported; with --child, one of them."""
    options = Options(**{f.name: getattr(FLAGS, f.name) for f in dataclasses.fields(Options)})
    if FLAGS.child:
        common.own_network('softmax_ps')
        compat.enable_graph_mode()
        num_ps, softmax = FLAGS.child.split(':')
        print(json.dumps(measure(int(num_ps), softmax, options, FLAGS.seed)))
        sys.stdout.flush()
        os._exit(0)  # pylint: disable=protected-access  # in-process servers never stop
    frame.run(rows([int(n) for n in FLAGS.num_ps], options, FLAGS.timeout_s), FIGURES, TABLE,
              'the same softmax on the fewest ps tasks', finish=mark)


# Options' fields whose flags are the frame's: --num_steps (--steps), --num_warmup
# (--warmup_steps).
_FRAME_FIELDS = ('num_steps', 'num_warmup')


def define_flags():
    """Defines the study's own flags (only when run as a script, so tests can import it)."""
    for field in dataclasses.fields(Options):
        if field.name not in _FRAME_FIELDS:
            define = flags.DEFINE_float if field.type is float else flags.DEFINE_integer
            define(field.name, field.default, field.name.replace('_', ' ') + '.')
    flags.DEFINE_list('num_ps', ['1', '2', '4'], 'ps task counts.')
    flags.DEFINE_float('timeout_s', 600.0, 'Bound on each configuration.')
    flags.DEFINE_string('child', None, 'Internal: run one configuration, num_ps:softmax, '
                        'seed --seed.')


if __name__ == '__main__':
    define_flags()
    frame.main(study, steps=Options.num_steps, warmup_steps=Options.num_warmup)

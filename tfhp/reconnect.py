"""`python -m tfhp.reconnect --checkpoint=PATH <the job's tfhp flags>`: save what live ps tasks
hold, after the workers ended.

Variables placed on a ps task live in that server's resource container, not in the client that
made them: while the ps tasks serve (--linger_s), a fresh client can reach them. This one takes
the place of worker 0 (its address, its flags), builds the same model with the same placement,
initialises nothing, reads every checkpointed variable the ps tasks hold, writes them as a
checkpoint tfhp restores (--train_dir), and then releases the lingering ps tasks, which exit
(--keep_serving: they linger on). Variables a worker held itself (local copies, the input's)
died with it and are named, not saved.

`--release_only` only releases them; `--reset_only --container=NAME <a client's flags>` only
clears what a client in a container (`tfhp.cluster.container_client`) that ended without its
reset (killed, timed out) left on them (`tfhp.search` does so for each failed client).
"""
import dataclasses
import os
import sys

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags
import tensorflow.compat.v1 as tf

from tfhp.runner import build
from tfhp import cli
from tfhp import compat
from tfhp import config as config_lib
from tfhp import topology as topology_lib
from tfhp.cluster import container_client
from tfhp.cluster import errors as cluster_errors
from tfhp.cluster import servers
from tfhp.cluster import task as task_lib

flags.DEFINE_string('checkpoint', None, 'Write the live variables here (a checkpoint path '
                    'prefix, e.g. /tmp/live/model.ckpt).')
flags.DEFINE_boolean('keep_serving', False, 'Leave the ps tasks lingering after saving '
                     '(default: release them, and they exit).')
flags.DEFINE_boolean('release_only', False, 'Only release the lingering ps tasks: read and '
                     'save nothing.')
flags.DEFINE_boolean('reset_only', False, 'Only reset the resource container (--container) '
                     'of a client that ended without resetting it, in its place (its '
                     '--task_index): read and save nothing.')


def _held_on_ps(variables):
    """{checkpoint name: variable} of the savable variables placed on ps tasks, and the names
    of those placed elsewhere."""
    if variables is None:
        variables = tf.global_variables()
    if not isinstance(variables, dict):
        variables = {v.op.name: v for v in variables}
    held = {n: v for n, v in variables.items()
            if tf.DeviceSpec.from_string(v.device).job == 'ps'}
    return held, sorted(set(variables) - set(held))


def save_live(cfg, checkpoint, release=True, log=print):
    """Reads the variables live ps tasks hold for cfg's model and saves them as a checkpoint.

    Args:
      cfg: the job's `tfhp.config.BenchmarkConfig` (a between-graph job with ps tasks); this
        process serves as worker 0 in its cluster.
      checkpoint: the checkpoint's path prefix.
      release: release the lingering serving tasks afterwards (`servers.release`).
      log: called with each line to print.
    Returns:
      ({checkpoint name: numpy value read live}, the path of the written checkpoint).
    Raises:
      config_lib.ConfigError: no ps task in cfg, or a ps task holds no value for a variable
        (the job never ran, or ran with other flags).
    """
    if not cfg.cluster.ps_hosts:
        raise config_lib.ConfigError('--ps_hosts: reconnecting needs the job\'s ps tasks')
    cfg = dataclasses.replace(cfg, cluster=dataclasses.replace(
        cfg.cluster, job_name='worker', task_index=0, linger_s=0.0))
    cluster = cfg.cluster
    server = servers.start_server(cluster, task_lib.server_proto(cfg))
    built = build.build(cfg, topology_lib.for_config(cfg), finalize=False)
    with built.graph.as_default():
        held, elsewhere = _held_on_ps(built.manager.savable_variables())
        saver = tf.train.Saver(held)
        missing = tf.report_uninitialized_variables(list(held.values()))
    if elsewhere:
        log('not saved (held by the workers, gone with them): %s' % ', '.join(elsewhere))
    config = tf.ConfigProto(device_filters=['/job:ps', '/job:worker/task:0'])
    options = tf.RunOptions(timeout_in_ms=int(cluster.peer_timeout_s * 1000))
    serving = task_lib.serving_tasks(cluster)
    with tf.Session(server.target, graph=built.graph, config=config) as sess:
        absent = [n.decode() for n in sess.run(missing, options=options)]
        if absent:
            raise config_lib.ConfigError(
                'the ps tasks hold no value for %s: did the job run, with these flags?'
                % ', '.join(absent))
        values = sess.run(held, options=options)
        path = saver.save(sess, checkpoint, write_meta_graph=False)
    log('saved %d variables the ps tasks hold to %s' % (len(values), path))
    if release:
        for job, index in servers.release(server.target, cluster, serving):
            log('could not release %s task %d (it had gone)' % (job, index))
    return values, path


def release_servers(cfg):
    """Releases the lingering serving tasks of cfg's cluster without reading anything; returns
    the (job, index) of those that could not be told (they had gone)."""
    cluster = dataclasses.replace(cfg.cluster, job_name='ps', task_index=0)
    # Through ps task 0's own master: no server of this process is needed.
    target = 'grpc://' + cluster.ps_hosts[0]
    return servers.release(target, cluster, task_lib.serving_tasks(cluster))


def reset_container(cfg):
    """Clears the resource container of cfg's client (--container) on the ps tasks.

    From a server in the client's place (its address, its sparse cluster): a reset closes
    every session of the master it is sent to, and a ps task's master holds the sessions the
    task serves with (`container_client`), so it is not sent there.
    Raises:
      config_lib.ConfigError: cfg is not a client in a container.
    """
    cluster = cfg.cluster
    if not cluster.container or not cluster.ps_hosts:
        raise config_lib.ConfigError('--reset_only needs the client\'s --container, '
                                     '--job_name=worker and --ps_hosts')
    server = servers.start_server(cluster, task_lib.server_proto(cfg))
    container_client.reset(server.target, cluster, [cluster.container])


def main(argv):
    """Saves (or only releases); returns the exit status: 0 done, 2 a setting is at fault."""
    if len(argv) > 1:
        print('tfhp.reconnect: error: unexpected arguments: %s' % ' '.join(argv[1:]),
              file=sys.stderr)
        return 2
    values = flags.FLAGS
    try:
        if not (values.release_only or values.reset_only or values.checkpoint):
            raise config_lib.ConfigError('--checkpoint: where to write the live variables '
                                         '(or --release_only, --reset_only)')
        cfg = cli.config_from_flags(values)
        if values.reset_only:
            reset_container(cfg)
            print('reset container %r on the ps tasks' % cfg.cluster.container)
        elif values.release_only:
            missed = release_servers(cfg)
            print('released the ps tasks%s' % (' except %s' % missed if missed else ''))
        else:
            save_live(cfg, values.checkpoint, release=not values.keep_serving)
    except (config_lib.ConfigError, cluster_errors.ClusterError) as e:
        print('tfhp.reconnect: error: %s' % e, file=sys.stderr)
        return 2
    return 0


def _exit(status):
    """Exits at once: the sessions that told the ps tasks to end would wait for them as the
    interpreter closes them (`servers.signal_done`), and there is nothing left to tear down."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(status)  # pylint: disable=protected-access


if __name__ == '__main__':
    compat.enable_graph_mode()
    app.run(lambda argv: _exit(main(argv)))

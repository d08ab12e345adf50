"""The table of ps transfers (tfhp.modes.TRANSFERS) and its builders agree, and the old flag
spellings (--ps_pipeline_bytes, --ps_pull_clock, ...) build the very graph --ps_transfer does."""
import pytest

from tfhp.runner import build
from tfhp import cli
from tfhp import config as config_lib
from tfhp import modes
from tfhp import replication
from tfhp import topology as topology_lib
from tfhp.replication import transfers

MIB = 1 << 20
_JOB = ['--job_name=worker', '--task_index=0', '--ps_hosts=127.0.0.1:2000,127.0.0.1:2001',
        '--worker_hosts=127.0.0.1:2002,127.0.0.1:2003', '--variable_update=distributed_replicated',
        '--model=null_dense', '--batch_size=1', '--weight_decay=0']


def test_every_row_has_a_builder_and_every_builder_a_row():
    assert sorted(transfers.BUILDERS) == sorted(modes.TRANSFERS)


def _config(*args):
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp'] + _JOB + list(args))
    try:
        return cli.config_from_flags(cli.FLAGS)
    finally:
        cli.FLAGS.unparse_flags()


def _graph(*args):
    """(name, op, device) of every node of worker 0's graph built from the flags `args`."""
    cfg = _config(*args)
    built = build.build(cfg, topology_lib.for_config(cfg))
    return sorted((n.name, n.op, n.device) for n in built.graph.as_graph_def().node)


@pytest.mark.parametrize('old, new', [
    (['--ps_pipeline_bytes=0'], ['--ps_transfer=whole_step']),
    (['--ps_pipeline_bytes=%d' % MIB, '--ps_pipeline_window=%d' % (2 * MIB)],
     ['--ps_transfer=pipelined', '--ps_chunk_bytes=%d' % MIB, '--ps_window_bytes=%d' % (2 * MIB)]),
    (['--ps_pipeline_bytes=262144', '--ps_pull_clock'], []),  # the new default
    (['--ps_pipeline_bytes=%d' % MIB, '--ps_background_pulls'],
     ['--ps_transfer=background', '--ps_chunk_bytes=%d' % MIB]),
    (['--ps_pipeline_bytes=%d' % MIB, '--ps_background_pulls', '--ps_push_priority',
      '--ps_pipeline_window=%d' % MIB, '--ps_push_fusion_bytes=65536'],
     ['--ps_transfer=priority', '--ps_chunk_bytes=%d' % MIB, '--ps_window_bytes=%d' % MIB,
      '--ps_group_bytes=65536']),
])
def test_the_old_spellings_build_the_same_graph(old, new):
    if new:  # (the default leaves the fields unset: the row's own)
        assert _config(*old).cluster == _config(*new).cluster
    assert _graph(*old) == _graph(*new)


def test_transfers_build_different_graphs():
    # What makes the test above able to fail: each transfer's graph is its own.
    whole, clocked = _graph('--ps_transfer=whole_step'), _graph('--ps_chunk_bytes=%d' % MIB)
    assert len(clocked) > len(whole)
    assert _graph('--ps_transfer=pipelined', '--ps_chunk_bytes=%d' % MIB) != clocked


@pytest.mark.parametrize('args, message', [
    (['--ps_pipeline_bytes=%d' % MIB, '--ps_pull_clock', '--ps_background_pulls'],
     'name no transfer; choose --ps_transfer from whole_step, '),
    (['--ps_pipeline_bytes=%d' % MIB, '--ps_transfer=pipelined'],
     '--ps_pipeline_bytes is an old spelling of --ps_transfer and its sizes, given with '
     '--ps_transfer: use one'),
    (['--ps_pipeline_window=%d' % MIB],
     '--ps_window_bytes=1048576 does not apply to --ps_transfer=whole_step'),
])
def test_old_spellings_that_name_no_transfer_are_refused(args, message):
    with pytest.raises(config_lib.ConfigError, match=message):
        _config(*args)


def test_the_defaults_apply_where_the_table_says():
    assert modes.transfer_of(modes.strategy('distributed_replicated')).name == 'pull_clocked'
    assert modes.transfer_of(modes.strategy('parameter_server')).name == modes.WHOLE_STEP
    assert modes.transfer_of(modes.strategy('collective_all_reduce')) is None
    assert transfers.make('pull_clocked').chunk_bytes == modes.DEFAULT_CHUNK_BYTES == 262144
    ring = config_lib.ReplicationConfig(variable_update='collective_all_reduce')
    assert ring.ring_subdivs == config_lib.DEFAULT_RING_SUBDIVS == 4
    assert ring.__class__(variable_update='collective_all_reduce',
                          collective_subdivs=0).ring_subdivs == 0
    assert config_lib.ReplicationConfig().ring_subdivs == 0
    # A synchronous parameter_server worker takes the whole step; in-graph, asynchronous and
    # one-process runs take no transfer, and their configurations pass.
    cfg = _config('--variable_update=parameter_server')
    manager = replication.make_variable_manager(cfg.replication, topology_lib.for_config(cfg),
                                                cfg.cluster)
    assert isinstance(manager.transfer, transfers.WholeStep)
    for args in (['--variable_update=parameter_server', '--graph_mode=in_graph'],
                 ['--cross_replica_sync=false'], ['--variable_update=collective_all_reduce']):
        assert not _config(*args).cluster.ps_transfer
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp', '--variable_update=parameter_server'])
    try:
        assert not cli.config_from_flags(cli.FLAGS).cluster.enabled
    finally:
        cli.FLAGS.unparse_flags()

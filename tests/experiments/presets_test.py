"""The in-graph presets build the configurations and flags the studies' own lists used to."""
from experiments import presets
from tfhp import config as config_lib

# replication_bench's VARIANTS before they became presets: (ReplicationConfig, ClusterConfig)
# fields.
REPLICATION_BEFORE = {
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


def test_replication_variants_make_the_same_configs():
    assert list(presets.REPLICATION) == list(REPLICATION_BEFORE)
    for name, (replication, cluster) in REPLICATION_BEFORE.items():
        preset = presets.REPLICATION[name]
        new_replication, new_cluster = preset.config_fields()
        assert config_lib.ReplicationConfig(**new_replication) == config_lib.ReplicationConfig(
            **replication), name
        assert config_lib.ClusterConfig(**new_cluster) == config_lib.ClusterConfig(
            **cluster), name
        assert not preset.cluster, name  # one process
    assert presets.REPLICATION['parameter_server_async'].args() == [
        '--variable_update=parameter_server', '--cross_replica_sync=false']


def test_ablation_rows_take_in_graph_flags_then_the_between_graph_modes():
    in_graph = [p for p in presets.ABLATIONS.values() if not p.cluster]
    assert [p.label for p in in_graph] == [
        'parameter_server', 'parameter_server staged_vars', 'independent',
        'replicated (copy to CPU)', 'replicated pscpu', 'replicated xring',
        'replicated collective', 'replicated nccl']
    args = {p.label: p.args() for p in in_graph}
    assert args['parameter_server staged_vars'] == ['--variable_update=parameter_server',
                                                    '--staged_vars=true']
    assert args['replicated nccl'] == ['--variable_update=replicated',
                                       '--all_reduce_spec=nccl']
    jobs = [p for p in presets.ABLATIONS.values() if p.cluster]
    assert [(p.ps_tasks, p.args()[-1]) for p in jobs] == [
        (1, '--variable_update=parameter_server'), (1, '--cross_replica_sync=false'),
        (1, '--variable_update=distributed_replicated'),
        (0, '--variable_update=collective_all_reduce')]


def test_the_bucket_presets_run_collective_all_reduce_with_buckets():
    buckets, one_pack = presets.LINKS['all_reduce_buckets'], presets.LINKS['all_reduce_one_pack']
    assert buckets.args() == ['--variable_update=collective_all_reduce',
                              '--fusion_bucket_bytes=262144']
    assert one_pack.args()[-1] == '--fusion_bucket_bytes=%d' % presets.ONE_PACK_BYTES
    for preset in (buckets, one_pack):
        assert preset.cluster and preset.ps_tasks == 0
        config_lib.ReplicationConfig(**preset.config_fields()[0])  # a valid configuration

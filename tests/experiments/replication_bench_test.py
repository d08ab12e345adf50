"""The replication and all-reduce benchmarks run at a tiny size and report sane figures."""
from experiments import allreduce_bench
from experiments import replication_bench


def test_replication_bench_measures_a_variant():
    record = replication_bench.measure('replicated_xring_repacking2', 2, 'trivial', 2, 1, 1)
    assert record['images_per_sec'] > 0
    assert record['config']['replication']['gradient_repacking'] == 2
    assert set(replication_bench.VARIANTS) >= {'parameter_server', 'independent',
                                               'replicated', 'parameter_server_async'}


def test_allreduce_bench_reports_bandwidths():
    records = allreduce_bench.measure(['pscpu', 'xring', 'hierarchical', 'collective', 'nccl'],
                                      2, [1024, 4096], repeats=1)
    # nccl is skipped without GPUs; every other algorithm has one record per size.
    assert sorted((r['algorithm'], r['bytes']) for r in records) == sorted(
        (a, s) for a in ('pscpu', 'xring', 'hierarchical', 'collective') for s in (1024, 4096))
    for r in records:
        assert r['algbw_bytes_per_sec'] == r['bytes'] / r['seconds_p50']
        assert r['busbw_bytes_per_sec'] == r['algbw_bytes_per_sec']  # 2(N-1)/N = 1 at N = 2
    assert allreduce_bench.parse_bytes('64m') == 64 << 20
    assert allreduce_bench.memcpy_bytes_per_sec(1 << 20, 3) > 0

"""The replication and all-reduce benchmarks run at a tiny size and report sane figures."""
import functools

from experiments import allreduce_bench
from experiments import common
from experiments import presets
from experiments import replication_bench


def test_replication_bench_measures_a_variant():
    record = replication_bench.measure('replicated_xring_repacking2', 2, 'trivial', 2, 1, 1,
                                       seed=11)
    assert record['images_per_sec'] > 0 and record['seed'] == 11
    assert record['config']['replication']['gradient_repacking'] == 2
    assert record['config']['run']['tf_random_seed'] == 11
    assert set(presets.REPLICATION) >= {'parameter_server', 'independent', 'replicated',
                                        'parameter_server_async'}


def test_replication_bench_repeats_and_pairs_the_efficiency_by_repeat():
    records = common.repeat_in_rounds(
        [functools.partial(replication_bench.measure, 'independent', n, 'trivial', 2, 1, 1)
         for n in (1, 2)], 2, 5, replication_bench.FIGURES)
    one, two = replication_bench.add_efficiencies(records)
    assert one['seeds'] == two['seeds'] == [5, 6]
    assert one['scaling_efficiency']['values'] == [1.0, 1.0]
    assert two['scaling_efficiency']['values'] == [
        b / (2 * a) for a, b in zip(one['images_per_sec']['values'],
                                    two['images_per_sec']['values'])]
    assert two['images_per_sec']['n'] == 2 and two['model'] == 'trivial'
    # The configurations differ in their seeds: each stays with its repeat.
    assert 'config' not in two and two['runs'][1]['config']['run']['tf_random_seed'] == 6


def test_allreduce_bench_reports_bandwidths():
    records = allreduce_bench.measure(['pscpu', 'xring', 'hierarchical', 'collective', 'nccl'],
                                      2, [1024, 4096], repeats=2)
    # nccl is skipped without GPUs; every other algorithm has one record per size.
    assert sorted((r['algorithm'], r['bytes']) for r in records) == sorted(
        (a, s) for a in ('pscpu', 'xring', 'hierarchical', 'collective') for s in (1024, 4096))
    for r in records:
        assert r['seconds']['n'] == 2
        assert r['algbw_bytes_per_sec']['values'] == [r['bytes'] / t
                                                      for t in r['seconds']['values']]
        # 2(N-1)/N = 1 at N = 2; the fastest run is the highest bandwidth.
        assert r['busbw_bytes_per_sec'] == r['algbw_bytes_per_sec']
        assert r['busbw_bytes_per_sec']['max'] == r['bytes'] / r['seconds']['min']
    allreduce_bench.mark(records)
    assert all('vs_reference' in r for r in records if r['algorithm'] != 'pscpu')
    assert allreduce_bench.parse_bytes('64m') == 64 << 20
    memcpy = allreduce_bench.memcpy_bytes_per_sec(1 << 20, 3)
    assert memcpy['n'] == 3 and memcpy['min'] > 0

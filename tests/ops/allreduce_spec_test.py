"""--all_reduce_spec parsing (pure Python): tf_cnn_benchmarks' grammar and clear errors."""
import re

import pytest

from tfhp.ops import allreduce_spec as spec_lib

Alg = spec_lib.AlgSpec
Range = spec_lib.RangeSpec


@pytest.mark.parametrize('spec, expected', [
    ('xring', (Range(Alg('xring', 1), None, None),)),
    ('psgpu#4', (Range(Alg('psgpu', 4), None, None),)),
    ('nccl/xring', (Range(Alg('nccl', 1), Alg('xring', 1), None),)),
    ('pscpu:2k:pscpu#2:64k:xring', (Range(Alg('pscpu', 1), None, 2048),
                                    Range(Alg('pscpu', 2), None, 65536),
                                    Range(Alg('xring', 1), None, None))),
    ('collective:1M:nccl', (Range(Alg('collective', 1), None, 1 << 20),
                            Range(Alg('nccl', 1), None, None))),
])
def test_parse(spec, expected):
    assert spec_lib.parse(spec) == expected


@pytest.mark.parametrize('spec, message', [
    ('ring', "unknown algorithm 'ring'"),
    ('nccl#2', "'nccl#2' cannot take 2 shards"),
    ('pscpu:32k', 'alg:limit:alg'),
    ('pscpu:3x:xring', "limit '3x'"),
    ('pscpu:64k:psgpu:32k:xring', 'limits must increase'),
    ('a/b/c', "'a/b/c' must be alg or alg/alg"),
    ('xring#0', 'cannot take 0 shards'),
])
def test_malformed_specs_name_the_bad_part(spec, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        spec_lib.parse(spec)


def test_algorithm_names():
    assert spec_lib.algorithm_names('pscpu:32k:nccl/xring') == {'pscpu', 'nccl', 'xring'}

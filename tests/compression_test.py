"""Gradient compression schemes: the registry, the flag's rules, and the casts' round trip."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tfhp import compression
from tfhp import config as config_lib


def test_the_registry_names_its_schemes_and_refuses_unknown_ones():
    assert compression.names()[:3] == ('none', 'float16', 'bfloat16')
    assert compression.get('none') is None
    assert compression.get('bfloat16').wire_ratio == 0.5
    with pytest.raises(ValueError, match='unknown gradient compression .*known: none, float16'):
        compression.get('fp8')
    with pytest.raises(ValueError, match='registered twice'):
        compression.register('float16', 'tfhp.compression.cast:Cast', 'float16')


def test_the_registry_says_what_each_scheme_says_of_its_sums():
    # The config reads the registry's word before TensorFlow loads; the scheme has its own.
    for name in compression.names()[1:]:
        assert compression.summable(name) == compression.get(name).summable, name
    assert compression.summable('none') and not compression.summable('topk')


@pytest.mark.parametrize('scheme, tolerance', [('float16', 1e-3), ('bfloat16', 8e-3)])
def test_a_cast_round_trip_keeps_the_gradient_within_its_rounding(scheme, tolerance):
    value = np.random.RandomState(0).uniform(-1, 1, [64]).astype(np.float32)
    compressor = compression.get(scheme)
    with tf.Graph().as_default(), tf.Session() as sess:
        payload = compressor.compress(tf.constant(value))
        back = compressor.decompress(payload, tf.float32, payload.shape)
        assert payload.dtype == tf.as_dtype(scheme) and back.dtype == tf.float32
        got = sess.run(back)
    np.testing.assert_allclose(got, value, atol=tolerance)
    assert not np.array_equal(got, value)


def test_the_flags_name_one_scheme():
    replication = config_lib.ReplicationConfig(variable_update='replicated',
                                               gradient_transfer_dtype='bfloat16')
    assert replication.compression == 'bfloat16'
    assert config_lib.ReplicationConfig(variable_update='replicated',
                                        gradient_compression='float16').compression == 'float16'
    assert config_lib.ReplicationConfig().compression == 'none'
    with pytest.raises(config_lib.ConfigError, match='both compress gradients'):
        config_lib.ReplicationConfig(variable_update='replicated',
                                     gradient_transfer_dtype='float16',
                                     gradient_compression='bfloat16')
    with pytest.raises(config_lib.ConfigError, match='--gradient_compression must be one of'):
        config_lib.ReplicationConfig(gradient_compression='zip')

"""Configuration validation: flags that cannot work are refused with a message naming them."""
import pytest

from tfhp import config as config_lib


@pytest.mark.parametrize('make, flag', [
    (lambda: config_lib.ModelConfig(batch_size=0), '--batch_size'),
    (lambda: config_lib.ModelConfig(batch_size=-3), '--batch_size'),
    (lambda: config_lib.ModelConfig(data_format='NCWH'), '--data_format'),
    (lambda: config_lib.OptimizerConfig(optimizer='lbfgs'), '--optimizer'),
    (lambda: config_lib.OptimizerConfig(learning_rate=0.0), '--learning_rate'),
    (lambda: config_lib.OptimizerConfig(piecewise_learning_rate_schedule='0.1;5'),
     '--piecewise_learning_rate_schedule'),
    (lambda: config_lib.OptimizerConfig(piecewise_learning_rate_schedule='0.1;5;0.01;3;0.1'),
     '--piecewise_learning_rate_schedule'),
    (lambda: config_lib.DeviceConfig(num_devices=0), '--num_devices'),
    (lambda: config_lib.DeviceConfig(device='tpu'), '--device'),
    (lambda: config_lib.DeviceConfig(local_parameter_device='gpu'), '--local_parameter_device'),
    (lambda: config_lib.DeviceConfig(num_intra_threads=-1), '--num_intra_threads'),
    (lambda: config_lib.DeviceConfig(num_inter_threads=-2), '--num_inter_threads'),
    (lambda: config_lib.DataConfig(image_dtype='int8'), '--image_dtype'),
    (lambda: config_lib.RunConfig(num_batches=0), '--num_batches'),
    (lambda: config_lib.RunConfig(eval=True), '--eval'),
    (lambda: config_lib.RunConfig(save_model_steps=5), '--save_model_steps'),
])
def test_invalid_settings_name_the_flag(make, flag):
    with pytest.raises(config_lib.ConfigError, match=flag):
        make()


def test_piecewise_schedule_parses():
    boundaries, rates = config_lib.parse_piecewise_schedule('0.3;10;0.03;20;0.003')
    assert boundaries == [10.0, 20.0]
    assert rates == [0.3, 0.03, 0.003]


def test_config_is_json_ready():
    d = config_lib.BenchmarkConfig().to_dict()
    assert d['model']['name'] == 'trivial'
    assert d['run']['num_batches'] == 100

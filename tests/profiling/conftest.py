"""A traced step of a 2-device run, shared by the profiling tests (built once per strategy)."""
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import build
from tfhp import config as config_lib
from tfhp import session as session_lib


def traced_two_device_step(variable_update):
    """(Built, RunMetadata) of the third step of a 2-tower trivial-model run."""
    if variable_update not in config_lib.VARIABLE_UPDATES:
        pytest.skip('--variable_update=%s does not exist yet' % variable_update)
    cfg = testing.small_config(device={'num_devices': 2},
                               replication={'variable_update': variable_update})
    built = build.build(cfg)
    with tf.Session(graph=built.graph, config=built.session_config) as sess:
        sess.run(built.init)
        sess.run(built.ops.post_init_ops)
        session_lib.warm_up(sess, built.ops.warmup_ops)
        for _ in range(2):  # the first run builds the executor
            sess.run(built.ops.train_op)
        return built, session_lib.run_traced(sess, built.ops.train_op)[1]


@pytest.fixture(scope='session', params=['parameter_server', 'replicated'])
def two_device_step(request):
    return (request.param,) + traced_two_device_step(request.param)

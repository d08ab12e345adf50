"""Session settings: the process-wide thread pools are not silently resized."""
import warnings

import pytest

from tfhp import session


def test_other_thread_pool_sizes_in_one_process_warn(monkeypatch):
    monkeypatch.setattr(session, '_process_thread_pools', [])
    with warnings.catch_warnings():
        warnings.simplefilter('error')
        proto = session.config_proto(num_intra_threads=2, num_inter_threads=2)
        session.config_proto(num_cpu_devices=4, num_intra_threads=2, num_inter_threads=2)
    assert proto.intra_op_parallelism_threads == 2
    with pytest.warns(RuntimeWarning, match=r'num_intra_threads=1.*first session.*\(2, 2\)'):
        session.config_proto(num_intra_threads=1, num_inter_threads=2)

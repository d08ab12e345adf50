import pytest

from tfhp.launcher import link_probe


def test_the_link_rate_allows_for_how_long_each_counter_read_took():
    # 1 MB between reads that each took 0.1 s, their middles 1 s apart: 8 Mbit/s at the
    # middles, between 8/1.1 (counters taken at the first read's start and the last's end) and
    # 8/0.9 Mbit/s.
    middle, (least, most) = link_probe._link_rates((0, 0.0, 0.1), (10 ** 6, 1.0, 1.1))
    assert middle == pytest.approx(8e6)
    assert (least, most) == (pytest.approx(8e6 / 1.1), pytest.approx(8e6 / 0.9))


def test_the_sender_must_outlast_the_warm_up():
    with pytest.raises(ValueError, match='warm-up'):
        link_probe.measure(network=None, sender=('worker', 0), receiver=('ps', 0), seconds=0.3,
                           warmup_s=0.3)

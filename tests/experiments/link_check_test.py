"""The link check's repeats, summarised (the measurement itself needs root: tests/cluster)."""
from experiments import link_check
from tfhp.launcher import link_probe


def test_repeats_of_each_direction_are_summarised():
    forward = [link_probe.Throughput(goodput_bps=94e6, link_bps=99e6),
               link_probe.Throughput(goodput_bps=93e6, link_bps=98e6),
               link_probe.Throughput(goodput_bps=95e6, link_bps=101e6)]
    backward = [link_probe.Throughput(goodput_bps=90e6, link_bps=96e6)] * 3
    record = link_check.summarise('100mbit', 100e6, forward, backward)
    assert record['repeats'] == 3 and record['configured_mbit'] == 100.0
    assert record['a_to_b']['link_mbit'] == {'median': 99.0, 'min': 98.0, 'max': 101.0, 'n': 3,
                                             'values': [99.0, 98.0, 101.0]}
    assert record['a_to_b']['goodput_mbit']['median'] == 94.0
    assert record['b_to_a']['link_mbit']['values'] == [96.0] * 3
    assert record['link_error'] == 0.04   # the worst repeat: 96 of 100 Mbit/s

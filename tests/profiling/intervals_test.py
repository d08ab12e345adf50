"""Interval arithmetic of the analyser, against hand-computed values."""
import pytest

from tfhp.profiling import analysis
from tfhp.profiling import intervals


def test_union_merges_overlapping_and_touching_intervals_and_drops_empty_ones():
    assert intervals.union([(5, 7), (0, 2), (1, 3), (3, 4), (8, 8)]) == [(0, 4), (5, 7)]
    assert intervals.length([(5, 7), (0, 2), (1, 3), (3, 4)]) == 6


def test_overlap_counts_common_time_once():
    a = [(0, 10), (20, 30)]
    b = [(5, 25), (5, 6)]
    assert intervals.overlap(a, b) == 10  # [5, 10) and [20, 25)
    assert intervals.overlap(a, []) == 0


def test_fair_shares_split_concurrent_time_and_add_up_to_the_union():
    spans = [(0, 10), (5, 15), (5, 10), (20, 22)]
    shares = intervals.fair_shares(spans)
    # [0,5) to the first; [5,10) three ways; [10,15) to the second; [20,22) to the last.
    assert shares == pytest.approx([5 + 5 / 3, 5 / 3 + 5, 5 / 3, 2], abs=1e-12)
    assert sum(shares) == pytest.approx(intervals.length(spans), abs=1e-12)


@pytest.mark.parametrize('device_intervals, expected', [
    ([[(0, 10)], [(0, 10)]], 1.0),              # fully overlapped: only the bottleneck costs
    ([[(0, 10)], [(10, 20)]], 0.0),             # one after the other
    ([[(0, 45)], [(24, 50)]], 21.0 / 26.0),     # 21 of the shorter 26 overlapped
    ([[(0, 10)]], None),                        # one device: undefined
    ([[(0, 10)], [(5, 5)]], None),              # the other never busy
])
def test_overlap_efficiency(device_intervals, expected):
    eta = analysis.overlap_efficiency(device_intervals)
    if expected is None:
        assert eta is None
    else:
        assert eta == pytest.approx(expected, abs=1e-12)


def test_overlap_efficiency_leaves_out_the_time_no_device_was_busy():
    # A warm-up trace: each device ran a short op, far apart. With the step time (100) in place
    # of the busy union (2.5) eta was (2.5 - 100) / 1 = -97.5.
    assert analysis.overlap_efficiency([[(0, 1.5)], [(99, 100)]]) == 0.0
    # Half of device 1's time overlapped device 0's: (3 - 2.5) / 1.
    assert analysis.overlap_efficiency([[(0, 2)], [(1.5, 2.5)], []]) == pytest.approx(0.5)

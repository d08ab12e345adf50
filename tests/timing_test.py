"""StepTimes figures on known durations."""
import json

import pytest

from tfhp import timing


def test_figures_from_known_durations():
    times = timing.StepTimes([0.1, 0.2, 0.3, 0.4], wall_time=1.25, images_per_step=10)
    assert times.images_per_sec == pytest.approx(40 / 1.25)
    ms = times.step_time_ms()
    assert ms['mean'] == pytest.approx(250.0)
    assert ms['p50'] == pytest.approx(250.0)
    assert ms['p90'] == pytest.approx(370.0)
    assert ms['std'] == pytest.approx(111.803398875, rel=1e-9)
    assert times.images_per_sec_spread()['p50'] == pytest.approx((10 / 0.2 + 10 / 0.3) / 2)


def test_concat_adds_wall_times():
    a = timing.StepTimes([0.1], 0.15, 8)
    b = timing.StepTimes([0.2, 0.2], 0.45, 8)
    both = timing.StepTimes.concat([a, b])
    assert both.num_steps == 3
    assert both.wall_time == pytest.approx(0.6)
    assert both.images_per_sec == pytest.approx(24 / 0.6)


def test_append_json_appends_lines(tmp_path):
    path = tmp_path / 'sub' / 'r.jsonl'
    timing.append_json(str(path), {'a': 1})
    timing.append_json(str(path), {'a': 2})
    assert [json.loads(l)['a'] for l in path.read_text().splitlines()] == [1, 2]


def test_a_range_is_the_median_and_the_extremes_of_the_repeats():
    r = timing.Range.of([0.42, 0.22, 0.35])
    assert (r.median, r.low, r.high, r.n) == (0.35, 0.22, 0.42, 3)
    assert r.text('%.0f%%', scale=100) == '35% [22%\u201342%]'
    assert timing.Range.of([1.0, 2.0, 4.0, 9.0]).median == 3.0
    assert timing.Range.of([2600.0]).text('%.1f') == '2600.0'
    with pytest.raises(ValueError):
        timing.Range.of([])

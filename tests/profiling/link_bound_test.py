"""Link bounds and the cluster diagnosis, from hand-made numbers."""
import pytest

from tfhp.profiling import link_bound

MB = 1e6


def test_transfer_time_is_bits_over_rate():
    assert link_bound.transfer_ms(12.5 * MB, 100e6) == pytest.approx(1000.0)  # 100 Mbit


def test_ps_bytes_come_from_the_placement():
    placement = {'/job:ps/task:0/device:CPU:0': 600, '/job:ps/task:1/device:CPU:0': 400,
                 '/job:ps/task:1/device:CPU:0/x': 100, '/job:worker/task:0/device:CPU:0': 7}
    assert link_bound.ps_task_bytes(placement, 3) == [600, 500, 0]


def test_parameter_server_traffic_and_its_bound_is_w_s_over_k_b():
    # 4 workers, 16 MB over 2 ps tasks, 100 Mbit everywhere.
    traffic = link_bound.expected_traffic('parameter_server', 4, 16 * MB, [8 * MB, 8 * MB])
    assert traffic['ps 0'] == (32 * MB, 32 * MB) and traffic['worker 3'] == (16 * MB, 16 * MB)
    per_task, busiest = link_bound.bound_ms(traffic, 100e6)
    assert busiest in ('ps 0', 'ps 1')
    assert per_task[busiest] == pytest.approx(4 * 16 * 8 / (2 * 100) * 1000)   # 2560 ms
    assert per_task['worker 0'] == pytest.approx(1280)
    assert link_bound.turns_ms(traffic, 100e6) == pytest.approx(2 * 2560)
    # 16-bit gradients halve what the ps receives and the workers send, not the reads.
    half = link_bound.expected_traffic('parameter_server', 4, 16 * MB, [8 * MB, 8 * MB], 0.5)
    assert half['ps 1'] == (32 * MB, 16 * MB) and half['worker 0'] == (8 * MB, 16 * MB)
    assert link_bound.turns_ms(half, 100e6) == pytest.approx(1.5 * 2560)
    # A faster ps NIC moves the bound to the workers'.
    rates = dict({'ps 0': 400e6, 'ps 1': 400e6}, **{'worker %d' % w: 100e6 for w in range(4)})
    per_task, busiest = link_bound.bound_ms(traffic, rates)
    assert busiest.startswith('worker') and per_task[busiest] == pytest.approx(1280)


def test_ring_all_reduce_moves_2_n_minus_1_over_n_s_per_worker():
    traffic = link_bound.expected_traffic('collective_all_reduce', 4, 16 * MB)
    assert set(traffic) == {'worker 0', 'worker 1', 'worker 2', 'worker 3'}
    assert traffic['worker 2'] == (24 * MB, 24 * MB)
    with pytest.raises(ValueError, match='independent'):
        link_bound.expected_traffic('independent', 2, MB)


def _measured():
    return {'ps 0': (32 * MB, 31 * MB), 'worker 0': (16 * MB, 16 * MB),
            'worker 1': (15 * MB, 16 * MB)}


def test_a_link_bound_job_is_blamed_on_the_links_bandwidth():
    # ps 0 moves 32 MB out per step at 200 Mbit: >= 1280 ms; the links cost 2600 - 300 ms.
    expected = link_bound.expected_traffic('parameter_server', 2, 16 * MB)
    d = link_bound.diagnose_cluster(2600.0, 300.0, 100.0, _measured(), dict.fromkeys(
        _measured(), 200e6), expected)
    assert d.link_exposure == pytest.approx(1 - 300 / 2600.0)
    assert d.communication_exposure == pytest.approx(1 - 100 / 2600.0)
    assert d.loopback_exposure == pytest.approx(1 - 100 / 300.0)
    assert d.link_ms == 2300.0
    assert (d.busiest, d.bound_ms) == ('ps 0', pytest.approx(1280.0))
    # A synchronous ps step reads, then sends: the measured 32 + 31 MB in turn, 2520 ms.
    assert d.explained_ms == pytest.approx(2520.0)
    assert d.model_bound_ms == pytest.approx(1280.0) and d.turns_ms == pytest.approx(2560.0)
    assert d.verdict == (
        'Bottleneck: the network links: they cost 88% of the step (2300 of 2600 ms, against '
        'the same job on loopback); ps 0\'s NIC moves 32.0 MB out and 31.0 MB in per step: at '
        '200 Mbit/s at least 1280 ms, about 2520 ms when reads and gradients take turns; the '
        'links\' bandwidth is the limit: more ps tasks (the ps NIC carries W x S / K), 16-bit '
        'gradients or an all-reduce move fewer bytes per NIC.')
    report = link_bound.format_cluster_diagnosis(d)
    assert report.splitlines()[-1] == d.verdict
    assert 'ps 0' in report and '1280.0 ms' in report


def test_links_costing_more_than_their_bandwidth_explains_never_blame_latency():
    d = link_bound.diagnose_cluster(5000.0, 300.0, 100.0, _measured(),
                                    dict.fromkeys(_measured(), 200e6))
    assert d.model_bound_ms is None and d.turns_ms is None
    assert 'their bandwidth explains 54% of that' in d.verdict    # 2520 of 4700 ms
    assert 'add no latency' in d.verdict and 'the rest is latency' not in d.verdict
    # Asynchronous steps overlap the directions: only the busier one counts.
    d = link_bound.diagnose_cluster(5000.0, 300.0, 100.0, _measured(),
                                    dict.fromkeys(_measured(), 200e6), synchronous=False)
    assert 'their bandwidth explains 27% of that' in d.verdict    # 1280 of 4700 ms


def test_distribution_without_link_cost_and_pure_compute():
    rates = dict.fromkeys(_measured(), 10e9)   # 10 Gbit: the bytes take 26 ms
    d = link_bound.diagnose_cluster(330.0, 320.0, 100.0, _measured(), rates)
    assert d.verdict.startswith('Bottleneck: distribution, not the links\' rate: the step is '
                                '220% longer than one worker\'s compute alone even on loopback')
    d = link_bound.diagnose_cluster(105.0, 104.0, 100.0, _measured(), rates)
    assert d.verdict.startswith('Bottleneck: compute: ')
    assert '(24% of the step)' in d.verdict

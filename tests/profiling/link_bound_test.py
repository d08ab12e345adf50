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
    # Sign-compressed downlink deltas shrink the reads as well (1/32 of them).
    both = link_bound.expected_traffic('distributed_replicated', 4, 16 * MB, [8 * MB, 8 * MB],
                                       0.5, 1 / 32)
    assert both['ps 1'] == (MB, 16 * MB) and both['worker 0'] == (8 * MB, 0.5 * MB)
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


def test_a_ps_beside_each_worker_moves_a_rings_bytes_per_nic():
    # 4 workers, a ps task on each one's host holding a quarter of 16 MB: each NIC sends its
    # gradients' three remote quarters and its ps's variables to the three other workers.
    traffic = link_bound.expected_traffic('distributed_replicated', 4, 16 * MB, [4 * MB] * 4,
                                          colocated=True)
    assert traffic == link_bound.expected_traffic('collective_all_reduce', 4, 16 * MB)
    # 16-bit gradients, 2 workers: worker 0's NIC sends half its gradients (4 MB) and its ps's
    # variables to worker 1 (8 MB); it receives worker 1's ps's variables and gradients.
    uneven = link_bound.expected_traffic('parameter_server', 2, 16 * MB, [8 * MB, 8 * MB], 0.5,
                                         colocated=True)
    assert uneven['worker 0'] == (4 * MB + 8 * MB, 8 * MB + 4 * MB)


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
    # One repeat: the report prints each figure alone, ending with the same verdict.
    report = link_bound.format_cluster_diagnosis(link_bound.diagnose_repeats(
        [(2600.0, 300.0, 100.0)], [_measured()], dict.fromkeys(_measured(), 200e6), expected))
    assert report.splitlines()[-1] == d.verdict
    assert '  ps 0         200 Mbit/s    32.00 /    31.00 MB  >=    1280.0 ms' in report
    assert 'link exposure:           88% (1 - loopback / shaped): 2300.0 ms' in report


def test_links_costing_more_than_their_bandwidth_explains_never_name_latency():
    d = link_bound.diagnose_cluster(5000.0, 300.0, 100.0, _measured(),
                                    dict.fromkeys(_measured(), 200e6))
    assert d.model_bound_ms is None and d.turns_ms is None
    assert 'their bandwidth explains 54% of that' in d.verdict    # 2520 of 4700 ms
    assert 'they shape bandwidth only' in d.verdict and 'latency' not in d.verdict
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


def test_no_verdict_names_latency():
    rates = dict.fromkeys(_measured(), 200e6)
    verdicts = [link_bound.diagnose_cluster(shaped, 300.0, 100.0, _measured(), rates).verdict
                for shaped in (5000.0, 2600.0, 330.0, 105.0)]   # every branch
    assert len({v.split(':')[1] for v in verdicts}) == 3
    assert not [v for v in verdicts if 'latency' in v.lower() or 'round trip' in v.lower()]


def _repeats():
    """Three repeats of a 2-worker ps job at 1 Gbit: the links cost 67%, 54% and 77%."""
    step_ms = [(900.0, 300.0, 100.0), (700.0, 320.0, 100.0), (1300.0, 300.0, 100.0)]
    measured = [_measured(), {'ps 0': (30 * MB, 29 * MB), 'worker 0': (15 * MB, 15 * MB)},
                {'ps 0': (34 * MB, 33 * MB), 'worker 0': (17 * MB, 17 * MB),
                 'worker 1': (16 * MB, 17 * MB)}]
    return link_bound.diagnose_repeats(step_ms, measured, dict.fromkeys(_measured(), 1e9),
                                       synchronous=True)


def test_repeats_give_the_median_figures_their_range_and_one_verdict_from_the_medians():
    r = _repeats()
    assert len(r.runs) == 3
    # The medians: 900 ms shaped, 300 on loopback, 100 alone; ps 0 32 MB out, 31 MB in.
    assert (r.median.shaped_ms, r.median.loopback_ms, r.median.one_process_ms) == (
        900.0, 300.0, 100.0)
    assert r.median.measured['ps 0'] == (32 * MB, 31 * MB)
    assert r.median.measured['worker 1'] == (15.5 * MB, 16.5 * MB)   # 2 repeats measured it
    link = r.spread('link_exposure')
    assert (link.median, link.low, link.high, link.n) == (
        pytest.approx(1 - 300 / 900.0), pytest.approx(1 - 320 / 700.0),
        pytest.approx(1 - 300 / 1300.0), 3)
    shaped = r.spread('shaped_ms')
    assert (shaped.median, shaped.low, shaped.high) == (900.0, 700.0, 1300.0)
    sent = r.bytes_spread('ps 0', 0)
    assert (sent.median, sent.low, sent.high) == (32 * MB, 30 * MB, 34 * MB)
    # The verdict is the medians' (600 of 900 ms; 63 MB in turn at 1 Gbit: 504 ms, 84% of
    # the link time), then the repeats' spread.
    assert r.verdict.startswith(
        'Bottleneck: the network links: they cost 67% of the step (600 of 900 ms, against '
        'the same job on loopback); ps 0\'s NIC moves 32.0 MB out and 31.0 MB in per step: at '
        '1 Gbit/s at least 256 ms, about 504 ms when reads and gradients take turns; the '
        'links\' bandwidth is the limit')
    assert r.verdict.endswith(
        ' Over 3 repeats the link exposure spans 54\u201377%, the communication exposure '
        '86\u201392% and the step on the links 700\u20131300 ms (67% of its median).')


def test_the_report_prints_median_and_range_of_every_figure():
    report = link_bound.format_cluster_diagnosis(
        _repeats(), notes=['the cores were 50% [40%\u201360%] busy'])
    lines = report.splitlines()
    assert lines[:6] == [
        'runs (the chief\'s median step time; median [min\u2013max] of 3 repeats):',
        '  on the shaped links          900.00 [700.00\u20131300.00] ms',
        '  on loopback                  300.00 [300.00\u2013320.00] ms',
        '  one process (compute)        100.00 [100.00\u2013100.00] ms',
        'link exposure:           67% [54%\u201377%] (1 - loopback / shaped): '
        '600.0 [380.0\u20131000.0] ms of the step',
        'communication exposure:  89% [86%\u201392%] (1 - one process / shaped); '
        '67% [67%\u201369%] on loopback']
    assert ('  ps 0           1 Gbit/s 32.00 [30.00\u201334.00] / 31.00 [29.00\u201333.00] MB  '
            '>=     256.0 ms') in lines
    assert ('  worker 1       1 Gbit/s 15.50 [15.00\u201316.00] / 16.50 [16.00\u201317.00] MB  '
            '>=     132.0 ms') in lines
    assert lines[-3:] == ['the cores were 50% [40%\u201360%] busy', '', _repeats().verdict]


def test_a_spread_across_the_significance_line_leaves_the_verdict_unsettled():
    rates = dict.fromkeys(_measured(), 10e9)
    # The links cost 3% and 15% (the one process 3% and 15% less): the medians' verdict
    # (9.5% each) is compute, and not settled.
    r = link_bound.diagnose_repeats([(310.0, 300.0, 300.0), (353.0, 300.0, 300.0)],
                                    [_measured(), _measured()], rates)
    assert r.median.link_exposure == pytest.approx(1 - 300 / 331.5)
    assert r.verdict.startswith('Bottleneck: compute: ')
    assert r.verdict.endswith('The link and communication exposures are below 10% in some '
                              'repeats and above it in others: the verdict is not settled (more '
                              '--repeats, or emulated compute where the tasks share the cores).')
    # Past the link line, only the link exposure decides.
    r = link_bound.diagnose_repeats([(310.0, 300.0, 100.0), (400.0, 300.0, 100.0)],
                                    [_measured(), _measured()], rates)
    assert r.verdict.startswith('Bottleneck: the network links: ')
    assert r.verdict.endswith(' The link exposure is below 10% in some repeats and above it in '
                              'others: the verdict is not settled (more --repeats, or emulated '
                              'compute where the tasks share the cores).')
    assert 'not settled' not in _repeats().verdict

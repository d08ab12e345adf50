"""Emulated links: rate parsing and probe messages (anywhere), real namespaces (root only)."""
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time

import pytest

from tfhp.launcher import link_probe
from tfhp.launcher import link_config
from tfhp.launcher import links

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Networks of the signal tests get their own prefix, so cleanup_stale(TEST_PREFIX) can touch
# nothing but theirs.
TEST_PREFIX = 'tfhptest-'


@pytest.mark.parametrize('text, bps', [
    ('1gbit', 1e9), ('200mbit', 2e8), ('500kbit', 5e5), ('100mbps', 8e8), ('1MBps', 8e6),
    ('1.5Gbit', 1.5e9), ('2gibit', 2 * 1024 ** 3), ('3kibps', 3 * 8 * 1024), ('1000', 1e3),
    ('1e3kbit', 1e6), (' 10 mbit ', 1e7)])
def test_parse_rate_follows_tc_units(text, bps):
    assert link_config.parse_rate(text) == bps


@pytest.mark.parametrize('text', ['', 'fast', '0mbit', '-1mbit', '1 gigabit', 'nan', 'inf',
                                  'mbit', '1e', '1mbit/s'])
def test_parse_rate_refuses_what_is_no_rate_naming_it(text):
    with pytest.raises(ValueError, match='%r is not a rate' % text):
        link_config.parse_rate(text)


def _fake_commands(monkeypatch, fail=None):
    """Fakes every ip/tc command: the one whose argv contains `fail` exits 1. Returns the log."""
    log = []

    def run(argv):
        log.append(argv)
        failed = fail is not None and fail in ' '.join(argv)
        return subprocess.CompletedProcess(argv, int(failed), '', 'Error: no luck\n' * failed)
    monkeypatch.setattr(links, '_run', run)
    monkeypatch.setattr(links.os, 'geteuid', lambda: 0)
    monkeypatch.setattr(links.shutil, 'which', lambda tool: '/sbin/' + tool)
    return log


@pytest.mark.parametrize('fail, message', [
    ('netns add', 'cannot create a network namespace: Error: no luck'),
    ('type bridge', 'cannot create a bridge: Error: no luck'),
    ('type veth', 'cannot create a veth pair: Error: no luck'),
    ('tbf', 'the tbf qdisc is not available: Error: no luck'),
    ('u32', 'the fair queue (htb, bfifo, u32) is not available: Error: no luck')])
def test_check_available_names_the_missing_piece_and_removes_its_probe(monkeypatch, fail,
                                                                        message):
    log = _fake_commands(monkeypatch, fail)
    with pytest.raises(links.LinksUnavailable) as raised:
        links.check_available()
    assert str(raised.value) == message
    assert log[-1][:3] == ['ip', 'netns', 'delete'] and log[-1][3] == log[0][3]


def test_check_available_passes_when_every_probe_step_does(monkeypatch):
    log = _fake_commands(monkeypatch)
    links.check_available()
    # namespace, bridge, veth, tbf; the fair queue (htb, its class, then a class, queue and
    # filter per peer after the default class's two); delete.
    assert [argv[0] for argv in log] == ['ip'] * 3 + ['tc'] * 8 + ['ip']


def test_check_available_wants_root(monkeypatch):
    _fake_commands(monkeypatch)
    monkeypatch.setattr(links.os, 'geteuid', lambda: 1000)
    with pytest.raises(links.LinksUnavailable, match='need root .* runs as uid 1000$'):
        links.check_available()


@pytest.mark.parametrize('tool', ['ip', 'tc'])
def test_check_available_wants_iproute2(monkeypatch, tool):
    _fake_commands(monkeypatch)
    monkeypatch.setattr(links.shutil, 'which', lambda name: None if name == tool else name)
    with pytest.raises(links.LinksUnavailable, match='need `%s` .*not on PATH' % tool):
        links.check_available()


def test_subnet_avoids_the_hosts_routes(monkeypatch):
    routes = [{'dst': 'default'}, {'dst': '10.0.0.0/9'}, {'dst': '192.0.2.0/24'}]
    monkeypatch.setattr(links, '_run', lambda argv: subprocess.CompletedProcess(
        argv, 0, json.dumps(routes), ''))
    monkeypatch.setattr(links.os, 'getpid', lambda: 5)  # would start at 10.0.5.0/24
    assert str(links._free_subnet(3)) == '10.128.0.0/24'


@pytest.mark.parametrize('kwargs, message', [
    (dict(rate_bps=5e5), 'worker 0 is 500000 bit/s'),
    (dict(rate_bps=1e8, task_rates_bps={('worker', 1): 10}), 'worker 1 is 10 bit/s'),
    (dict(rate_bps=1e8, tasks=[('worker', 0), ('worker', 0)]), 'tasks must be distinct'),
    (dict(rate_bps=1e8, task_rates_bps={('ps', 0): 1e9}),
     r"not in the network: \[\('ps', 0\)\]"),
    # The host's offer is faked below: machines differ in what they build in and allow.
    (dict(rate_bps=1e8, options=link_config.LinkOptions(congestion_control='dctcp')),
     r"congestion_control \(--link_congestion_control\) is 'dctcp'; this host lets a "
     r"namespace choose reno, cubic \(net.ipv4.tcp_allowed_congestion_control"),
])
def test_network_refuses_bad_arguments_before_creating_anything(monkeypatch, kwargs, message):
    log = _fake_commands(monkeypatch)
    monkeypatch.setattr(links, 'available_congestion_controls', lambda: ['reno', 'cubic'])
    with pytest.raises(ValueError, match=message):
        links.EmulatedNetwork(**dict({'tasks': [('worker', 0), ('worker', 1)]}, **kwargs))
    assert not log


@pytest.mark.parametrize('kwargs, message', [
    (dict(port_buffer_bytes=65536), r"is 65536; a port must hold at least 70000 bytes"),
    (dict(congestion_control='cubic; reboot'),
     r"congestion_control \(--link_congestion_control\) is 'cubic; reboot'; it must name")])
def test_link_options_refuse_what_cannot_work_naming_it(kwargs, message):
    with pytest.raises(ValueError, match=message):
        link_config.LinkOptions(**kwargs)


@pytest.mark.parametrize('text, size', [('1.25mb', 1310720), ('256kb', 262144), ('300000', 300000),
                                        ('2M', 2097152), ('70000b', 70000)])
def test_parse_size_follows_tc_units(text, size):
    assert link_config.parse_size(text) == size


def test_cleanup_stale_deletes_only_dead_creators_namespaces(monkeypatch):
    names = ['tfhp-100-abcd-hub', 'tfhp-100-abcd-ps0', 'tfhp-200-0123-worker0', 'tfhp-300-ff',
             'other-100-abcd-hub', 'tfhp-100-abcd-probe']
    log = _fake_commands(monkeypatch)
    monkeypatch.setattr(links, '_namespaces', lambda: names)
    monkeypatch.setattr(links, '_alive', lambda pid: pid == 200)
    removed = links.cleanup_stale('tfhp-')
    assert removed == ['tfhp-100-abcd-hub', 'tfhp-100-abcd-ps0', 'tfhp-100-abcd-probe']
    assert [argv[3] for argv in log] == removed


# The tests below build real networks: root, iproute2, namespaces and tbf.


def _leftovers(prefix):
    out = subprocess.run(['ip', '-j', 'netns', 'list'], capture_output=True, text=True,
                         timeout=10, check=True).stdout.strip()
    return [n['name'] for n in json.loads(out or '[]') if n['name'].startswith(prefix)]


def _host_links():
    out = subprocess.run(['ip', '-j', 'link', 'show'], capture_output=True, text=True,
                         timeout=10, check=True).stdout
    return sorted(link['ifname'] for link in json.loads(out))


def _carries(measured, rate_bps):
    """Whether a link probe's measurement is within 10% of the rate, allowing for the time its
    counter reads took (a loaded machine is slow to start them)."""
    least, most = measured.link_bps_range
    return least <= 1.1 * rate_bps and most >= 0.9 * rate_bps


def test_links_carry_their_rate_both_ways_and_close_leaves_nothing(links_available):
    ps, w0, w1 = ('ps', 0), ('worker', 0), ('worker', 1)
    host_links = _host_links()
    network = links.EmulatedNetwork([w0, w1, ps], rate_bps=2e8, task_rates_bps={ps: 1e8})
    with network:
        assert network.hosts('worker') == ['%s:2222' % network.ip(t) for t in (w0, w1)]
        assert len({network.ip(t) for t in network.tasks}) == 3
        rates = {(w0, w1): 2e8, (w1, w0): 2e8, (w0, ps): 1e8}  # ps's download bounds w0 -> ps
        for (sender, receiver), rate in rates.items():
            measured = link_probe.measure(network, sender, receiver, seconds=1.2)
            assert _carries(measured, rate), (sender, receiver, measured)
            assert measured.goodput_bps == pytest.approx(rate, rel=0.1), (sender, receiver)
        # The veth counts a GSO packet's headers once; the shaper counts every frame's.
        received, shaped = network.interface_counters(ps)[1], network.shaped_bytes(ps)[1]
        assert 0.9 * shaped < received < shaped
        assert _host_links() == host_links  # Nothing of the job is in the host's namespace.
    assert not _leftovers(network.name)
    network.close()  # Idempotent.
    assert _host_links() == host_links


def test_a_slow_counter_read_still_measures_the_rate(links_available, monkeypatch):
    # On a loaded machine a `tc` read may take its counter a third of a second late. The
    # sender now sends until the last read is done: before, it stopped 0.1 s after that read
    # began, and reads this late measured the link 17% low.
    w0, w1 = ('worker', 0), ('worker', 1)
    with links.EmulatedNetwork([w0, w1], rate_bps=2e8) as network:
        read = network.received_bytes

        def late_read(task):
            time.sleep(0.3)
            return read(task)
        monkeypatch.setattr(network, 'received_bytes', late_read)
        measured = link_probe.measure(network, w0, w1, seconds=1.2)
    # Both reads equally late: their middles are as far apart as their counters.
    assert measured.link_bps == pytest.approx(2e8, rel=0.1), measured
    assert _carries(measured, 2e8), measured


def test_the_fair_queue_gives_a_later_flow_its_share_and_counts_each_peer(links_available):
    # One sender, two receivers: only the sender's upload is shared. Behind a FIFO a flow
    # that starts while another holds the link got 8% of 100 Mbit/s; each peer's queue
    # served in turn gives it about half.
    ps, w0, w1 = ('ps', 0), ('worker', 0), ('worker', 1)
    with links.EmulatedNetwork([w0, w1, ps], rate_bps=1e8) as network:
        assert network.sent_bytes_by_peer(w0) == {w1: 0, ps: 0}
        first = threading.Thread(target=link_probe.measure, args=(network, w0, w1, 2.5))
        first.start()
        time.sleep(0.5)
        later = link_probe.measure(network, w0, ps, seconds=1.5)
        first.join()
        assert later.goodput_bps > 0.3e8
        sent = network.sent_bytes_by_peer(w0)
        # Each class counted its own peer's bytes: at least 0.3 of 100 Mbit/s for 1.2 s.
        assert min(sent.values()) > 0.3e8 * 1.2 / 8
        assert sum(sent.values()) <= network.shaped_bytes(w0)[0]



def test_losses_count_the_drops_where_two_senders_meet_one_receiver(links_available):
    # Two workers send to the ps at once, each at its own link's full rate: the ps's download
    # (the switch port) gets twice what it passes, so it drops there and the senders resend.
    ps, w0, w1 = ('ps', 0), ('worker', 0), ('worker', 1)
    with links.EmulatedNetwork([w0, w1, ps], rate_bps=1e8) as network:
        before = {t: network.losses(t) for t in network.tasks}
        assert all(set(b) == {'dropped_sent', 'dropped_received', 'tcp_retransmits',
                              'tcp_timeouts'} for b in before.values())
        assert before[ps]['dropped_received'] == before[ps]['tcp_retransmits'] == 0
        other = threading.Thread(target=link_probe.measure, args=(network, w1, ps, 1.5))
        other.start()
        link_probe.measure(network, w0, ps, seconds=1.5)
        other.join()
        after = {t: network.losses(t) for t in network.tasks}
        assert after[ps]['dropped_received'] > 0
        assert after[w0]['tcp_retransmits'] + after[w1]['tcp_retransmits'] > 0
        # The ps only acknowledged: nothing of its own was dropped or resent.
        assert after[ps]['dropped_sent'] == after[ps]['tcp_retransmits'] == 0


def _port_limit_bytes(network, task):
    """The bytes the task's switch port may queue: tc shows the tbf's bound as a latency at
    its rate, after its bucket."""
    # pylint: disable=protected-access
    out = subprocess.run(['tc', '-n', network._hub, '-j', 'qdisc', 'show', 'dev',
                          network._ports[task]], capture_output=True, text=True, check=True)
    options = json.loads(out.stdout)[0]['options']
    return options['lat'] * 1e-6 * options['rate'] + options['burst']


def _upload_queues(network, task):
    """(the bytes the task's upload tbf queues beyond its bucket, [each peer queue's bytes])."""
    out = subprocess.run(['tc', '-n', network.namespace(task), '-j', 'qdisc', 'show', 'dev',
                          'eth0'], capture_output=True, text=True, check=True)
    qdiscs = json.loads(out.stdout)
    tbf, = [q['options'] for q in qdiscs if q['kind'] == 'tbf']
    return tbf['lat'] * 1e-6 * tbf['rate'], [q['options']['limit'] for q in qdiscs
                                             if q['kind'] == 'bfifo']


def test_a_slow_hosts_upload_queues_hold_what_tcp_may_put_there(links_available):
    ps = ('ps', 0)
    # 20 ms of 60 Mbit/s is 150 KB, less than two connections' two GSO packets each.
    with links.EmulatedNetwork([ps, ('worker', 0)], rate_bps=6e7) as network:
        tbf, peers = _upload_queues(network, ps)
        assert tbf == pytest.approx(links.MIN_HOST_QUEUE_BYTES, rel=0.01)
        assert peers == [links.MIN_HOST_QUEUE_BYTES] * 2  # the worker's queue and ARP's
        network.set_rate(ps, 1e9)  # 20 ms of 1 Gbit/s (2.5 MB) is more than the floor
        assert _upload_queues(network, ps)[0] == pytest.approx(2.5e6, rel=0.01)


def test_link_options_size_the_ports(links_available):
    ps, w0 = ('ps', 0), ('worker', 0)
    options = link_config.parse({'link_port_buffer': '1.25mb'})
    with links.EmulatedNetwork([w0, ps], rate_bps=1e8, options=options) as network:
        for task in network.tasks:
            # 1.25 MiB, 100 ms at 100 Mbit/s; the default would be 20 ms (250 KB).
            assert _port_limit_bytes(network, task) == pytest.approx(1310720, rel=0.01)
        network.set_rate(ps, 2e8)  # A new rate keeps the port's bytes.
        assert _port_limit_bytes(network, ps) == pytest.approx(1310720, rel=0.01)
        measured = link_probe.measure(network, w0, ps, seconds=1.0)
        assert _carries(measured, 1e8), measured


def test_link_options_set_each_tasks_congestion_control(links_available):
    offered = links.available_congestion_controls()
    other = next((c for c in offered if c != links.congestion_control()), None)
    if other is None:
        pytest.skip('this host allows one TCP congestion control only: %s' % offered)
    options = link_config.LinkOptions(congestion_control=other)
    with links.EmulatedNetwork([('ps', 0), ('worker', 0)], rate_bps=1e8,
                               options=options) as network:
        for task in network.tasks:
            argv = ['ip', 'netns', 'exec', network.namespace(task), 'cat',
                    '/proc/sys/net/ipv4/tcp_congestion_control']
            assert subprocess.run(argv, capture_output=True, text=True,
                                  check=True).stdout.strip() == other
    assert links.congestion_control() != other  # the host's own is left as it was


def test_proc_counters_pairs_each_groups_names_and_values():
    text = ('Tcp: RtoMin RetransSegs\nUdp: InDatagrams\nTcp: 200 17\nUdp: 5\n'
            'TcpExt: TCPTimeouts\nTcpExt: 3\n')
    assert links.proc_counters(text) == {'Tcp.RtoMin': 200, 'Tcp.RetransSegs': 17,
                                         'Udp.InDatagrams': 5, 'TcpExt.TCPTimeouts': 3}


_CREATOR = '''
import sys, time
from tfhp.launcher import links
with links.exit_on_sigterm(), links.EmulatedNetwork(
        [('ps', 0), ('worker', 0)], 1e8, prefix=%r) as network:
    print(network.name, flush=True)
    time.sleep(20)
''' % TEST_PREFIX


def _start_creator():
    """A child that creates a network, prints its name and sleeps; returns (child, name)."""
    child = subprocess.Popen([sys.executable, '-c', _CREATOR], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=dict(os.environ,
                                                                         PYTHONPATH=ROOT))
    if not select.select([child.stdout], [], [], 10)[0]:
        child.kill()
    name = child.stdout.readline().strip()
    assert name, child.communicate(timeout=10)[1]
    assert len(_leftovers(name)) == 3  # hub and two tasks
    return child, name


def test_sigterm_to_the_creator_leaves_nothing(links_available):
    child, name = _start_creator()
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=10) == 128 + signal.SIGTERM
    assert not _leftovers(name)


def test_cleanup_stale_clears_a_sigkilled_creators_network(links_available):
    child, name = _start_creator()
    child.kill()
    child.wait(timeout=10)
    left = _leftovers(name)
    assert len(left) == 3
    assert sorted(links.cleanup_stale(TEST_PREFIX)) == sorted(left)
    assert not _leftovers(name)

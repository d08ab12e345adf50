"""Emulated network links between the tasks of a one-machine job: a NIC of a given rate per task.

On one machine tasks talk over loopback at memory speed, so a parameter server's bandwidth never
saturates. `EmulatedNetwork` gives every task a Linux network namespace of its own, joined to a
bridge by a veth pair that a token bucket (`tc qdisc ... tbf`) shapes in both directions:

    task namespace                       hub namespace
    lo, eth0 10.B.C.k/24  <-- veth -->   t<k> -- br0 (bridge) -- t<j> <-- veth --> ...
    eth0 egress: tbf = task's upload     t<k> egress: tbf = task's download

Traffic from task k to task j is bound by k's upload and j's download, like two machines on one
switch. Without `netem`, links add no latency beyond the tbf queues (20 ms of the rate each,
a host's at least `MIN_HOST_QUEUE_BYTES`, or the port buffer's bytes).

A task's upload queues what waits for the link fairly: a queue per peer, served in turn (an htb
of one class per peer under the tbf; htb serves classes of one priority by deficit round robin),
each queue bounded like tbf's own. A host's NIC is fair among its flows: Linux's default
fq_codel, and a multi-queue NIC that hashes flows to queues it serves in turn. So when a ps sends
W workers their weights at once, they arrive together. Unlike fq_codel the queues drop by
length, not by delay (this kernel has no codel module). (tbf's one queue, where the TCP flow
that opened first kept most of the link, was `--link_queue=fifo` until commit 52a41b8.)
A task's download (the switch port) is one FIFO queue, as a switch's port is, of 20 ms of the
rate unless `link_config.LinkOptions.port_buffer_bytes` sizes it as a switch's buffer is sized,
in bytes. Where many senders meet one receiver (W workers pushing to a ps) that port overflows
(incast): 16 workers pushing into a 100 Mbit/s ps port of 250 KB (20 ms) ran steps 23% longer
than the step model's, losing hundreds of packets a step; with 1.25 MB, within 5% of it
(docs/results.md). A sender whose loss only a timeout reveals idles for its retransmission
timeout, at least 200 ms on Linux where a round trip here is under 1 ms (a lower floor, as data
centres set against incast, cut no step of the job above: `--link_rto_min_ms` until commit
52a41b8). `losses` counts the drops and the timeouts. Each namespace's TCP congestion control
is the host's default (here BBR) unless `link_config.LinkOptions.congestion_control` sets
another (the pipelined push-pull's steps were 0-8% shorter with CUBIC at 1 Gbit/s;
docs/results.md). The options and their parsing live in `tfhp.launcher.link_config`.

The bridge lives in a namespace of its own (the hub), not in the host's: nothing of a job touches
the host's network (no interface, route or bridge-netfilter rule there), every job may use any
subnet, and deleting a job's namespaces deletes all its links. The subnet still avoids the host's
routes, so that joining a hub to the host later needs no renumbering.

Cleanup protocol (the caller owns it; this module registers no handler): create the network in a
`with` block (or call `close()` in a `finally`) after ending the tasks, and run the block inside
`exit_on_sigterm()` so SIGTERM unwinds it like SIGINT does. A SIGKILLed creator leaves named
namespaces behind; `cleanup_stale()` removes those whose creator pid is dead. A namespace that
still holds a process lives on, unnamed, until that process exits.

Imports no TensorFlow: the launcher, which imports none, uses it.
"""
import contextlib
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import subprocess

from tfhp.launcher import link_config

PREFIX = 'tfhp-'
PORT = 2222  # Every task has its own address and port space, so one fixed port serves all.
_TIMEOUT_S = 10.0  # Bound on one ip/tc command; they take milliseconds.
# tbf parameters, measured on this 2-core VM (HZ=250) with one TCP stream between two tasks.
# Bucket: a 64 KiB bucket at 1 gbit (0.5 ms of tokens) passed 86% of what larger ones did, 1 ms
# and more passed the full rate; 4 ms (one scheduler tick) leaves room for a dequeue softirq
# that runs late on a busy machine. tbf counts a GSO packet as the frames it becomes
# (qdisc_pkt_len), so the veths keep their offloads (there is no ethtool here anyway): the link
# passed the configured rate within 0.5% from 100 mbit to 2 gbit (experiments/link_check.py).
_BURST_S = 0.004
# At least one whole 64 KiB GSO packet, so that tbf need not segment it (CPU is scarce).
_MIN_BURST_BYTES = 65536
# Queue bound, like a switch port's buffer: two senders into one 200 mbit download got the full
# rate together with 5, 20 and 50 ms; 20 ms keeps the added queueing delay small.
_LATENCY = '20ms'
_LATENCY_S = 0.020
# What a peer's class lends in one turn: a 64 KiB GSO packet.
_QUANTUM = '65536'
# The classes' buckets: tc's default (rate / HZ) rounds to a few bytes here; the tbf above
# bounds the bursts that reach the link.
_HTB_BURST = '1mb'
# Below this the 64 KiB burst is over half a second of the link: no longer a shaped link.
MIN_RATE_BPS = 1e6

# A host's upload queue holds at least what TCP small queues lets the connections to one peer
# put in it, two GSO packets each, and there are two (each task opens one to the other): below
# that, the host dropped its own packets. resnet20 at 60 Mbit/s (20 ms: 150 KB) lost 80-960
# a job and resent as many (docs/results.md). A NIC's queue is deeper still: a txqueuelen of
# 1000 packets.
MIN_HOST_QUEUE_BYTES = 4 * link_config.MIN_PORT_BUFFER_BYTES


class LinksUnavailable(ValueError):
    """This machine cannot emulate links; the message is one line naming what is missing."""


def _run(argv):
    """Runs one ip/tc command; returns its CompletedProcess (text output, never raises on it)."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False)


def _must(argv):
    result = _run(argv)
    if result.returncode:
        raise RuntimeError('%s failed: %s' % (' '.join(argv), result.stderr.strip()))
    return result.stdout


def _tbf(namespace, device, rate_bps, verb='add', limit_bytes=None, floor_bytes=0):
    """tc's command for a token bucket of the rate whose queue holds `limit_bytes`, or (None)
    `_LATENCY` of the rate and at least `floor_bytes`."""
    burst = max(_MIN_BURST_BYTES, int(rate_bps * _BURST_S / 8))
    if limit_bytes is None and rate_bps * _LATENCY_S / 8 < floor_bytes:
        limit_bytes = floor_bytes + burst  # as `latency` counts: the queue and the bucket
    # Handle 1: lets the fair queue attach under it (a change keeps the handle).
    handle = ['handle', '1:'] if verb == 'add' else []
    bound = ['limit', str(limit_bytes)] if limit_bytes else ['latency', _LATENCY]
    return ['tc', '-n', namespace, 'qdisc', verb, 'dev', device, 'root'] + handle + [
        'tbf', 'rate', '%dbit' % rate_bps, 'burst', str(burst)] + bound


def _fair_queue(namespace, device, rate_bps, peer_ips):
    """The tc commands that put a queue per peer under the device's tbf (module doc).

    An htb class of the link's rate holds a class per peer (10:<k+2> for peer_ips[k]) and one
    for what goes to no peer (10:1, ARP). Each is guaranteed an equal part of the rate and may
    borrow up to all of it: htb serves classes under their guarantee first, then lends the rest
    in turn. A guarantee, not only turns, because a TCP flow paces itself (BBR, the default
    here, does): a flow that started while another held the link sends too little to keep its
    queue full, and turns alone left it 8-25% of the link. Each queue holds as much as the
    upload's tbf: `_LATENCY` of the rate, at least `MIN_HOST_QUEUE_BYTES`.
    """
    tc = ['tc', '-n', namespace]
    limit = str(max(MIN_HOST_QUEUE_BYTES, int(rate_bps * _LATENCY_S / 8)))
    share = '%dbit' % (rate_bps / (len(peer_ips) + 1))
    rate = ['%dbit' % rate_bps, 'burst', _HTB_BURST, 'cburst', _HTB_BURST]
    argv = [tc + ['qdisc', 'add', 'dev', device, 'parent', '1:1', 'handle', '10:', 'htb',
                  'default', '1', 'r2q', '1000000'],
            tc + ['class', 'add', 'dev', device, 'parent', '10:', 'classid', '10:ffff', 'htb',
                  'rate'] + rate]
    for k, ip in enumerate([None] + list(peer_ips)):
        classid = '10:%x' % (k + 1)
        argv.append(tc + ['class', 'add', 'dev', device, 'parent', '10:ffff', 'classid',
                          classid, 'htb', 'rate', share, 'ceil'] + rate + [
                              'quantum', _QUANTUM])
        argv.append(tc + ['qdisc', 'add', 'dev', device, 'parent', classid, 'bfifo', 'limit',
                          limit])
        if ip:
            argv.append(tc + ['filter', 'add', 'dev', device, 'parent', '10:', 'protocol', 'ip',
                              'prio', '1', 'u32', 'match', 'ip', 'dst', ip + '/32', 'flowid',
                              classid])
    return argv


def _root_qdisc(namespace, device):
    """The statistics of the device's root qdisc (the tbf), which count its children's too."""
    out = _must(['tc', '-n', namespace, '-s', '-j', 'qdisc', 'show', 'dev', device])
    return json.loads(out)[0]


def proc_counters(text):
    """{'Group.Name': value} of /proc/net/snmp or /proc/net/netstat text (or both): each group
    is a line of names then a line of values, both led by the group ('Tcp: RetransSegs ...',
    then 'Tcp: 0 ...')."""
    counters, names = {}, {}
    for line in text.splitlines():
        group, fields = line.split(':', 1)
        if group in names:
            counters.update(('%s.%s' % (group, name), int(value))
                            for name, value in zip(names.pop(group), fields.split()))
        else:
            names[group] = fields.split()
    return counters


def _read_proc(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return None


def congestion_control():
    """The host's default TCP congestion control, which a new namespace inherits unless
    `LinkOptions.congestion_control` names another (e.g. 'bbr', 'cubic'). How fully flows that
    share a link use it depends on it, so a run records it."""
    return _read_proc('/proc/sys/net/ipv4/tcp_congestion_control')


def available_congestion_controls():
    """The TCP congestion controls a task's namespace may choose (e.g. ['reno', 'bbr', 'cubic']):
    the host's `net.ipv4.tcp_allowed_congestion_control`. A kernel may build in more
    (`tcp_available_congestion_control`), but outside the host's own namespace setting one that
    is not allowed fails with 'Operation not permitted'."""
    return (_read_proc('/proc/sys/net/ipv4/tcp_allowed_congestion_control') or '').split()


def check_available():
    """Raises `LinksUnavailable` unless links can be emulated here.

    Probes by creating a throwaway namespace holding a bridge and a veth pair with a tbf qdisc,
    then deleting it. The probe is named like a job (<prefix><pid>-<4 hex>-probe), so
    `cleanup_stale` clears it if this process is killed meanwhile.

    Raises:
      LinksUnavailable: not root, no `ip` or `tc`, or no namespaces, bridges, veth pairs,
        tbf, or the fair queue's htb, bfifo and u32.
    """
    if os.geteuid() != 0:
        raise LinksUnavailable('emulated links need root (network namespaces and tc); '
                               'this process runs as uid %d' % os.geteuid())
    for tool in ('ip', 'tc'):
        if shutil.which(tool) is None:
            raise LinksUnavailable('emulated links need `%s` (iproute2), which is not on PATH'
                                   % tool)
    namespace = '%s%d-%s-probe' % (PREFIX, os.getpid(), secrets.token_hex(2))
    steps = [('cannot create a network namespace', ['ip', 'netns', 'add', namespace]),
             ('cannot create a bridge', ['ip', '-n', namespace, 'link', 'add', 'name', 'br0',
                                         'type', 'bridge']),
             ('cannot create a veth pair', ['ip', '-n', namespace, 'link', 'add', 'name', 'a',
                                            'type', 'veth', 'peer', 'name', 'b']),
             ('the tbf qdisc is not available', _tbf(namespace, 'a', 1e8))] + [
                 ('the fair queue (htb, bfifo, u32) is not available', argv)
                 for argv in _fair_queue(namespace, 'a', 1e8, ['10.0.0.2'])]
    try:
        for what, argv in steps:
            result = _run(argv)
            if result.returncode:
                lines = result.stderr.strip().splitlines() or ['exit status %d' % result.returncode]
                raise LinksUnavailable('%s: %s' % (what, lines[0]))
    finally:
        _run(['ip', 'netns', 'delete', namespace])


def _namespaces():
    out = _must(['ip', '-j', 'netns', 'list']).strip()
    return [entry['name'] for entry in json.loads(out)] if out else []


def _delete_namespaces(names):
    for name in names:
        _run(['ip', 'netns', 'delete', name])  # Gone already is fine: deletion is the goal.


def cleanup_stale(prefix=PREFIX):
    """Deletes the namespaces (and so the links) of jobs whose creating process is dead.

    Namespaces are named <prefix><pid>-<4 hex>-..., so a dead pid marks a SIGKILLed creator's
    leftovers. Assumes the creators ran in this pid namespace; a reused pid keeps its leftovers.

    Args:
      prefix: the prefix the networks were created with.
    Returns:
      The names of the deleted namespaces.
    """
    pattern = re.compile(r'^%s(\d+)-[0-9a-f]{4}-' % re.escape(prefix))
    stale = [name for name in _namespaces()
             if pattern.match(name) and not _alive(int(pattern.match(name).group(1)))]
    _delete_namespaces(stale)
    return stale


def _alive(pid):
    try:
        os.kill(pid, 0)  # Signal 0 only checks that the process exists.
    except ProcessLookupError:
        return False
    except PermissionError:  # It exists, and is another user's.
        pass
    return True


@contextlib.contextmanager
def exit_on_sigterm():
    """Within the block SIGTERM and SIGHUP raise SystemExit(128 + signal), so `finally` runs.

    Call from the main thread (Python handles signals there only). SIGINT already raises
    KeyboardInterrupt. The previous handlers come back when the block ends.
    """
    def _exit(signum, _):
        raise SystemExit(128 + signum)
    previous = {s: signal.signal(s, _exit) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def _add_namespace(name):
    _must(['ip', 'netns', 'add', name])
    # No IPv6 on the job's interfaces, so that no neighbour discovery or MLD packets (90 bytes
    # each, flooded by the bridge) add to the counters. Best effort: a kernel without IPv6, or a
    # machine without sysctl, has nothing to silence or keeps those few bytes.
    _run(['ip', 'netns', 'exec', name, 'sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1',
          'net.ipv6.conf.default.disable_ipv6=1'])


def _free_subnet(count):
    """A 10.B.C.0/24 off the host's routes, starting from one the pid picks (jobs differ)."""
    if count > 253:
        raise ValueError('an emulated network holds at most 253 tasks, not %d' % count)
    routes = json.loads(_must(['ip', '-j', '-4', 'route', 'show', 'table', 'all']) or '[]')
    taken = [ipaddress.ip_network(r['dst'], strict=False) for r in routes
             if r.get('dst', 'default') != 'default' and '/' in r['dst']]
    for k in range(65536):
        index = (os.getpid() + k) % 65536
        subnet = ipaddress.ip_network('10.%d.%d.0/24' % (index >> 8, index & 255))
        if not any(subnet.overlaps(t) for t in taken):
            return subnet
    raise LinksUnavailable('every 10.B.C.0/24 overlaps a route of this host')


class EmulatedNetwork:
    """A namespace per task, joined to a bridge by a veth pair shaped both ways (see module doc).

    Attributes:
      tasks: the (job, index) tasks, in the order given.
      name: the job's tag, <prefix><pid>-<4 hex>; every namespace of the job starts with it.
    """

    def __init__(self, tasks, rate_bps, task_rates_bps=None, prefix=PREFIX, options=None):
        """Creates the network; on any failure removes what it created and raises.

        Args:
          tasks: (job, index) pairs, e.g. [('ps', 0), ('worker', 0), ('worker', 1)].
          rate_bps: each task's link rate in bits per second, both directions
            (e.g. `link_config.parse_rate('1gbit')`).
          task_rates_bps: {(job, index): bits per second} for tasks whose link differs
            (e.g. the ps tasks').
          prefix: start of every namespace name; `cleanup_stale` matches on it.
          options: `link_config.LinkOptions` (None: the defaults).
        Raises:
          ValueError: a rate below MIN_RATE_BPS or for a task not in `tasks`, a task given
            twice, over 253 tasks, or a congestion control the kernel does not offer.
          RuntimeError: an ip or tc command failed (its message says which).
        """
        self.tasks = [tuple(t) for t in tasks]
        task_rates_bps = task_rates_bps or {}
        self.options = options or link_config.LinkOptions()
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError('tasks must be distinct: %s' % (self.tasks,))
        if set(task_rates_bps) - set(self.tasks):
            raise ValueError('rates given for tasks not in the network: %s'
                             % sorted(set(task_rates_bps) - set(self.tasks)))
        rates = {t: task_rates_bps.get(t, rate_bps) for t in self.tasks}
        self._rates = rates
        for task, rate in rates.items():
            if rate < MIN_RATE_BPS:
                raise ValueError('the link of %s %d is %g bit/s; emulated links need at least '
                                 '%g (1mbit)' % (task + (rate, MIN_RATE_BPS)))
        wanted, offered = self.options.congestion_control, available_congestion_controls()
        if wanted and wanted not in offered:
            raise ValueError('congestion_control (--link_congestion_control) is %r; this '
                             'host lets a namespace choose %s (net.ipv4.'
                             'tcp_allowed_congestion_control, which root can extend)'
                             % (wanted, ', '.join(offered) or 'none'))
        self.name = '%s%d-%s' % (prefix, os.getpid(), secrets.token_hex(2))
        self._hub = self.name + '-hub'
        self._closed = False
        subnet = _free_subnet(len(self.tasks))
        self._ips = {t: str(subnet[k + 1]) for k, t in enumerate(self.tasks)}
        self._namespaces = {t: '%s-%s%d' % ((self.name,) + t) for t in self.tasks}
        self._ports = {t: 't%d' % k for k, t in enumerate(self.tasks)}  # Bridge ports, in hub.
        try:
            self._create(subnet.prefixlen, rates)
        except BaseException:
            self.close()
            raise

    def _create(self, prefixlen, rates):
        hub = self._hub
        _add_namespace(hub)
        # Without multicast snooping the bridge sends no IGMP packets to the tasks' counters.
        _must(['ip', '-n', hub, 'link', 'add', 'name', 'br0', 'type', 'bridge',
               'mcast_snooping', '0'])
        _must(['ip', '-n', hub, 'link', 'set', 'br0', 'up'])
        for task in self.tasks:
            namespace, port = self._namespaces[task], self._ports[task]
            _add_namespace(namespace)
            _must(['ip', '-n', namespace, 'link', 'set', 'lo', 'up'])
            if self.options.congestion_control:
                _must(['ip', 'netns', 'exec', namespace, 'sysctl', '-qw',
                       'net.ipv4.tcp_congestion_control=' + self.options.congestion_control])
            _must(['ip', '-n', hub, 'link', 'add', 'name', port, 'type', 'veth',
                   'peer', 'name', 'eth0', 'netns', namespace])
            _must(['ip', '-n', hub, 'link', 'set', port, 'master', 'br0', 'up'])
            _must(['ip', '-n', namespace, 'addr', 'add', '%s/%d' % (self._ips[task], prefixlen),
                   'dev', 'eth0'])
            _must(['ip', '-n', namespace, 'link', 'set', 'eth0', 'up'])
            _must(_tbf(namespace, 'eth0', rates[task],  # the task's upload
                       floor_bytes=MIN_HOST_QUEUE_BYTES))
            peers = [self._ips[t] for t in self.tasks if t != task]
            for argv in _fair_queue(namespace, 'eth0', rates[task], peers):
                _must(argv)
            _must(_tbf(hub, port, rates[task],  # the task's download
                       limit_bytes=self.options.port_buffer_bytes))

    def rate_bps(self, task):
        """The task's link rate, bits per second (each way)."""
        return self._rates[tuple(task)]

    def ip(self, task):
        """The task's IPv4 address, e.g. '10.17.3.2'."""
        return self._ips[tuple(task)]

    def hosts(self, job, port=PORT):
        """'IP:PORT' of every task of `job`, by index (for --ps_hosts, --worker_hosts)."""
        return ['%s:%d' % (self._ips[t], port) for t in sorted(self.tasks) if t[0] == job]

    def namespace(self, task):
        """The name of the task's network namespace."""
        return self._namespaces[tuple(task)]

    def command(self, task, argv):
        """`argv` run inside the task's namespace (`ip netns exec` execs it: same pid)."""
        return ['ip', 'netns', 'exec', self.namespace(task)] + list(argv)

    def set_link(self, task, up):
        """Takes the task's link down (its bridge port, like a cable pulled at the switch: the
        task's own interface and routes stay, its packets go nowhere) or brings it back up."""
        _must(['ip', '-n', self._hub, 'link', 'set', self._ports[tuple(task)],
               'up' if up else 'down'])

    def set_rate(self, task, rate_bps):
        """Changes the task's link rate, both directions, while the job runs (the queued
        packets stay)."""
        task = tuple(task)
        if rate_bps < MIN_RATE_BPS:
            raise ValueError('the link of %s %d cannot be %g bit/s; emulated links need at '
                             'least %g (1mbit)' % (task + (rate_bps, MIN_RATE_BPS)))
        _must(_tbf(self.namespace(task), 'eth0', rate_bps, 'change',
                   floor_bytes=MIN_HOST_QUEUE_BYTES))
        _must(_tbf(self._hub, self._ports[task], rate_bps, 'change',
                   self.options.port_buffer_bytes))
        self._rates[task] = rate_bps

    def interface_counters(self, task):
        """(bytes sent, bytes received) by the task's eth0, as its statistics count them.

        A veth counts a GSO packet (up to 64 KiB of payload) with its headers once, so these are
        close to the IP payload; `shaped_bytes` counts every frame's headers, as the link does.
        """
        out = _must(['ip', '-n', self.namespace(task), '-s', '-j', 'link', 'show', 'eth0'])
        stats = json.loads(out)[0]['stats64']
        return stats['tx']['bytes'], stats['rx']['bytes']

    def sent_bytes_by_peer(self, task):
        """{peer task: bytes the task's upload passed to it}, from the fair queue's classes
        (whole frames, as `shaped_bytes` counts them)."""
        out = _must(['tc', '-n', self.namespace(task), '-s', '-j', 'qdisc', 'show', 'dev',
                     'eth0'])
        by_class = {q.get('parent'): q['bytes'] for q in json.loads(out) if q['kind'] == 'bfifo'}
        peers = [t for t in self.tasks if t != tuple(task)]
        return {peer: by_class.get('10:%x' % (k + 2), 0) for k, peer in enumerate(peers)}

    def shaped_bytes(self, task):
        """(upload, download) bytes the task's two tbf qdiscs passed: the rate bounds these."""
        return _root_qdisc(self.namespace(task), 'eth0')['bytes'], self.received_bytes(task)

    def received_bytes(self, task):
        """Bytes the task's download tbf passed: `shaped_bytes(task)[1]` in one `tc` read."""
        return _root_qdisc(self._hub, self._ports[task])['bytes']

    def losses(self, task):
        """What the task's links dropped and what its TCP did about it, since the start:

          dropped_sent: packets its upload queue dropped (a full queue of its own NIC);
          dropped_received: packets its download dropped, the switch port's buffer before it:
            where many senders meet one receiver (incast, e.g. W workers pushing to a ps);
          tcp_retransmits: segments its TCP sent again;
          tcp_timeouts: its retransmission timeouts, each a flow idle for at least 200 ms
            (Linux's least RTO): a loss the step model does not know.
        A GSO packet counts once in the drops, however many frames it holds.
        """
        text = _must(self.command(task, ['cat', '/proc/net/snmp', '/proc/net/netstat']))
        tcp = proc_counters(text)
        return {'dropped_sent': _root_qdisc(self.namespace(task), 'eth0')['drops'],
                'dropped_received': _root_qdisc(self._hub, self._ports[task])['drops'],
                'tcp_retransmits': tcp['Tcp.RetransSegs'],
                'tcp_timeouts': tcp['TcpExt.TCPTimeouts']}

    def close(self):
        """Deletes every namespace of the job, and so its links and bridge; idempotent.

        Call after the tasks ended: a namespace that holds a process outlives its name.
        """
        if self._closed:
            return
        _delete_namespaces([n for n in _namespaces() if n.startswith(self.name + '-')])
        self._closed = True

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

"""Measures one TCP stream between two tasks of a `links.EmulatedNetwork`: goodput and link rate.

A receiver in one task's namespace and a sender in the other's, each a `python -c` child, send
for a while. Both figures leave out the first `warmup_s` after the first byte arrived, which
holds TCP's slow start and tbf's initial burst (a full bucket, 4 ms of the rate):
  goodput: TCP payload bytes the receiver timed itself, from then until the sender closed;
  link: bytes the receiver's download tbf passed (whole frames, every header counted: what the
    configured rate bounds), read by this process then and once `seconds` have passed; the
    sender is told to stop after that read, so the link is busy through both.
    Each read is a `tc` child, which on a loaded machine may take a tenth of a second to start:
    the counter was taken somewhere inside it, so the link rate is given with the range that
    uncertainty allows as well as at the reads' middles.
A full 1514-byte frame carries 1448 payload bytes, so goodput is at most 95.6% of the link.
Imports no TensorFlow.
"""
import collections
import json
import subprocess
import sys
import time

# Bits per second in one direction: TCP payload, and frames as the shaping link counts them;
# link_bps_range: (least, most) link rate the counter reads' own durations allow.
Throughput = collections.namedtuple('Throughput', ['goodput_bps', 'link_bps', 'link_bps_range'],
                                    defaults=(None,))

# Bound on each socket wait in the children, so that a broken link ends them, not hangs them.
_SOCKET_TIMEOUT_S = 10.0

_RECEIVER = r'''
import fcntl, json, socket, struct, sys, termios, time
server = socket.create_server((sys.argv[1], 0))
server.settimeout(%(timeout)g)
print(server.getsockname()[1], flush=True)
conn, _ = server.accept()
conn.settimeout(%(timeout)g)
buffer = bytearray(1 << 20)
conn.recv_into(buffer)
print('first byte', flush=True)
start, window_bytes = time.monotonic() + float(sys.argv[2]), None
while True:
    n = conn.recv_into(buffer)
    now = time.monotonic()
    if window_bytes is None and now >= start:
        # This read's bytes, and those still queued (a receiver that got no core for a while
        # finds a backlog), arrived before the window.
        queued = fcntl.ioctl(conn.fileno(), termios.FIONREAD, b'\0\0\0\0')
        start, window_bytes = now, -struct.unpack('i', queued)[0]
    elif window_bytes is not None:
        window_bytes += n
    if not n:
        break
print(json.dumps(window_bytes * 8 / (now - start)))
''' % {'timeout': _SOCKET_TIMEOUT_S}

_SENDER = r'''
import select, socket, sys, time
conn = socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=%(timeout)g)
chunk = bytes(1 << 20)
end = time.monotonic() + float(sys.argv[3])
# Sends until its parent closes its stdin (after the last counter read: the link is busy through
# every read), or for the bound in argv[3] if no parent does.
while time.monotonic() < end and not select.select([sys.stdin], [], [], 0)[0]:
    conn.sendall(chunk)
conn.close()
''' % {'timeout': _SOCKET_TIMEOUT_S}


def _download_bytes(network, task):
    """(bytes the task's download tbf passed, monotonic times the read began and ended)."""
    before = time.monotonic()
    count = network.received_bytes(task)
    return count, before, time.monotonic()


def _link_rates(begin, end):
    """(rate at the reads' middles, (least, most) rate) from two `_download_bytes` reads."""
    bits = (end[0] - begin[0]) * 8
    middle = bits / ((end[1] + end[2]) / 2 - (begin[1] + begin[2]) / 2)
    return middle, (bits / (end[2] - begin[1]), bits / (end[1] - begin[2]))


def measure(network, sender, receiver, seconds=1.5, warmup_s=0.3):
    """Sends from `sender` to `receiver` for `seconds`; returns the rates after `warmup_s`.

    Args:
      network: a `links.EmulatedNetwork`.
      sender, receiver: (job, index) tasks of it.
      seconds: how long after the first byte the counter is read the last time; the sender
        sends until then.
      warmup_s: how long after the first byte the timing starts.
    Returns:
      A `Throughput` of the sender's upload and the receiver's download together.
    Raises:
      ValueError: `seconds` leaves no time after the warm-up.
      RuntimeError: a child failed (its error output is in the message).
      subprocess.TimeoutExpired: a child outlived its bound.
    """
    if seconds <= warmup_s:
        raise ValueError('send for longer than the warm-up: %g s, warm-up %g s'
                         % (seconds, warmup_s))
    command = [sys.executable, '-c']
    rx = subprocess.Popen(
        network.command(receiver, command + [_RECEIVER, network.ip(receiver), str(warmup_s)]),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    tx = None
    try:
        port = rx.stdout.readline().strip()  # The receiver listens before it prints its port.
        if port:
            tx = subprocess.Popen(
                network.command(sender, command + [_SENDER, network.ip(receiver), port,
                                                   str(seconds + _SOCKET_TIMEOUT_S)]),
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True)
        if not port or rx.stdout.readline() != 'first byte\n':
            raise RuntimeError('the receiver in %s %d got nothing: %s'
                               % (receiver + (rx.communicate(timeout=_SOCKET_TIMEOUT_S)[1],)))
        first_byte = time.monotonic()
        time.sleep(warmup_s)
        begin = _download_bytes(network, receiver)
        time.sleep(max(0.0, first_byte + seconds - time.monotonic()))
        end = _download_bytes(network, receiver)
        tx.stdin.close()
        if tx.wait(timeout=_SOCKET_TIMEOUT_S):
            raise RuntimeError('the sender in %s %d failed: %s'
                               % (sender + (tx.stderr.read(),)))
        out, err = rx.communicate(timeout=_SOCKET_TIMEOUT_S)
        if rx.returncode:
            raise RuntimeError('the receiver in %s %d failed: %s' % (receiver + (err,)))
    finally:
        for child in (rx, tx):
            if child is not None and child.poll() is None:
                child.kill()
                child.wait()
    link_bps, link_bps_range = _link_rates(begin, end)
    return Throughput(goodput_bps=json.loads(out), link_bps=link_bps,
                      link_bps_range=link_bps_range)

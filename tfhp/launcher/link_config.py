"""What a job's emulated links are set with: their options, in one table (`OPTIONS`, read by
`python -m tfhp.launch`, `tfhp.diagnose` and the studies' experiments/link_flags.py), tc-style
rates and sizes parsed (`parse_rate`, `parse_size`), and the settings beyond the rates
(`LinkOptions`). `tfhp.launcher.links` builds the links; its module doc says what each setting
does there.

Pure Python: the launcher's and the commands' help import it without TensorFlow.
"""
import dataclasses
import re
from typing import Optional

# tc's rate units (tc(8), "RATES"), matched without regard to case like tc does: *bit are bits
# per second, *bps are BYTES per second ("mbps" is 8 000 000 bit/s); k, m, g, t are powers of
# 1000 and ki, mi, gi, ti powers of 1024. A bare number is bits per second.
_UNITS = dict([('', 1), ('bit', 1), ('bps', 8)] + [
    (prefix + unit, scale * base ** power)
    for power, (si, iec) in enumerate([('k', 'ki'), ('m', 'mi'), ('g', 'gi'), ('t', 'ti')], 1)
    for prefix, base in ((si, 1000), (iec, 1024))
    for unit, scale in (('bit', 1), ('bps', 8))])
_SIZE_UNITS = {'': 1, 'b': 1, 'k': 1024, 'kb': 1024, 'm': 1024 ** 2, 'mb': 1024 ** 2}
_SIZE = re.compile(r'^\s*(\d+(?:\.\d*)?)\s*([a-z]*)\s*$', re.IGNORECASE)
_RATE = re.compile(r'^\s*(\d+(?:\.\d*)?(?:e\d+)?)\s*([a-z]*)\s*$', re.IGNORECASE)

# A 64 KiB GSO packet counts as its 45 frames and their headers (qdisc_pkt_len): a port that
# cannot hold one drops it every time.
MIN_PORT_BUFFER_BYTES = 70000


@dataclasses.dataclass(frozen=True)
class LinkOptions:
    """How the emulated hosts and switch behave, beyond the rates (`tfhp.launcher.links`).

    Attributes:
      port_buffer_bytes: each switch port's queue (a task's download), bytes; None: 20 ms of
        the task's rate. At least one 64 KiB GSO packet and its headers.
      congestion_control: the TCP congestion control of every task's connections, one the
        host lets a namespace choose (/proc/sys/net/ipv4/tcp_allowed_congestion_control:
        'cubic', 'reno', 'bbr'...); None: the host's default, which each namespace inherits.
    Raises:
      ValueError: a value that cannot work; the message names the attribute and the
        launcher's flag for it.
    """
    port_buffer_bytes: Optional[int] = None
    congestion_control: Optional[str] = None

    def __post_init__(self):
        if self.port_buffer_bytes is not None and self.port_buffer_bytes < MIN_PORT_BUFFER_BYTES:
            raise ValueError('port_buffer_bytes (--link_port_buffer) is %r; a port must hold at '
                             'least %d bytes (a 64 KiB GSO packet as its frames), or None for '
                             '20 ms of the rate'
                             % (self.port_buffer_bytes, MIN_PORT_BUFFER_BYTES))
        if self.congestion_control is not None and not re.fullmatch(
                r'[a-z0-9_]+', str(self.congestion_control)):
            raise ValueError('congestion_control (--link_congestion_control) is %r; it must '
                             'name one of the kernel\'s algorithms, e.g. cubic, or be None for '
                             'the host\'s default' % (self.congestion_control,))


# The options of emulated links, each defined once: the launcher's argparse options, the absl
# flags of tfhp.diagnose and of the studies (experiments/link_flags.py) are made from these rows.
# {the option without '--': its help}; every default is None (loopback, or the kernel's).
OPTIONS = {
    'link_bandwidth': 'every task\'s NIC rate, in a network namespace of its own, shaped both '
                      'ways (tc rates: 1gbit, 200mbit; needs root and iproute2)',
    'ps_link_bandwidth': 'the ps tasks\' NIC rate (default: --link_bandwidth)',
    'link_port_buffer': 'each switch port\'s queue (a task\'s download) in bytes, tc sizes: '
                        '1.25mb, 256kb (default: 20 ms of the rate). Where W workers push to '
                        'one ps a shallow port overflows (incast)',
    'link_congestion_control': 'the tasks\' TCP congestion control on links, one the kernel '
                               'offers: cubic, reno, bbr (default: the host\'s). BBR flows that '
                               'share a ps port and idle between chunks use less of it',
}
# The OPTIONS that set LinkOptions (`parse`); the others are the rates.
SETTINGS = ('link_port_buffer', 'link_congestion_control')


def parse(values):
    """The LinkOptions of option values, {option name: its text or None}.

    Raises:
      ValueError: a value that cannot work, naming its option.
    """
    buffer = values.get('link_port_buffer')
    return LinkOptions(port_buffer_bytes=parse_size(buffer) if buffer else None,
                       congestion_control=values.get('link_congestion_control'))


def _quantity(text, pattern, units, what, hint):
    """The number of `text` times its unit's scale in `units` (any case); ValueError '<text> is
    not <what>: <hint>' where `text` is no positive number with one of those units."""
    match = pattern.match(str(text))
    unit = match.group(2).lower() if match else None
    if unit not in units or float(match.group(1)) <= 0:
        raise ValueError('%r is not %s: %s' % (text, what, hint))
    return float(match.group(1)) * units[unit]


def parse_size(text):
    """Bytes of a tc-style size: '1.25mb', '256kb', '300000' (tc(8), "SIZES": k, kb, m, mb are
    powers of 1024 bytes; a bare number or b is bytes).

    Raises:
      ValueError: `text` is not such a size; the message names it.
    """
    return int(_quantity(text, _SIZE, _SIZE_UNITS, 'a size', 'use a positive number of bytes, '
                         'or with k/kb or m/mb (KiB, MiB), e.g. 1.25mb'))


def parse_rate(text):
    """Bits per second of a tc-style rate: '1gbit', '200mbit', '500kbit', '100mbps' (bytes/s).

    Args:
      text: a positive number with one of tc's units (see `_UNITS`); case does not matter.
    Returns:
      The rate in bits per second, a float.
    Raises:
      ValueError: `text` is not such a rate; the message names it.
    """
    return _quantity(text, _RATE, _UNITS, 'a rate', 'use a positive number and a tc unit, '
                     'e.g. 200mbit, 1gbit, 500kbit, or 100mbps for megabytes per second')

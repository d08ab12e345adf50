"""The flags of how emulated links behave (`tfhp.launcher.links.LinkOptions`), for the studies
that run jobs on them; the launcher has the same flags (`python -m tfhp.launch --help`)."""
from absl import flags

from tfhp.launcher import links

FLAGS = flags.FLAGS


def define():
    """Defines --link_queue, --link_rto_min_ms, --link_port_buffer, --link_congestion_control."""
    flags.DEFINE_enum('link_queue', 'fair', links.HOST_QUEUES, 'How each task\'s NIC queues '
                      'what it sends (tfhp.launcher.links).')
    flags.DEFINE_integer('link_rto_min_ms', None, 'The tasks\' least TCP retransmission '
                         'timeout (tfhp.launcher.links; default: the kernel\'s 200 ms).')
    flags.DEFINE_string('link_port_buffer', None, 'Each switch port\'s queue, tc sizes '
                        '(1.25mb; default: 20 ms of the rate).')
    flags.DEFINE_string('link_congestion_control', None, 'The tasks\' TCP congestion control, '
                        'one the host allows in a namespace '
                        '(net.ipv4.tcp_allowed_congestion_control; default: the host\'s).')


def options():
    """The jobs' `links.LinkOptions`, from the flags.

    Raises:
      ValueError: a value that cannot work, naming its flag.
    """
    return links.LinkOptions(host_queue=FLAGS.link_queue, rto_min_ms=FLAGS.link_rto_min_ms,
                             port_buffer_bytes=(links.parse_size(FLAGS.link_port_buffer)
                                                if FLAGS.link_port_buffer else None),
                             congestion_control=FLAGS.link_congestion_control)


def record(link_options):
    """The fields a study's record keeps of its jobs' link options."""
    return {'link_queue': link_options.host_queue, 'rto_min_ms': link_options.rto_min_ms,
            'port_buffer_bytes': link_options.port_buffer_bytes,
            'congestion_control': link_options.congestion_control or
                                  links.congestion_control()}

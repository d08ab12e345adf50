"""The flags of how emulated links behave, for the studies that run jobs on them: the rows of
`tfhp.launcher.link_config.OPTIONS` that set `LinkOptions` (`link_config.SETTINGS`), as the
launcher's options are."""
from absl import flags

from tfhp.launcher import link_config
from tfhp.launcher import links

FLAGS = flags.FLAGS


def define():
    """Defines --link_port_buffer and --link_congestion_control (`link_config.SETTINGS`)."""
    for name in link_config.SETTINGS:
        text = link_config.OPTIONS[name]
        flags.DEFINE_string(name, None, text[0].upper() + text[1:] + '.')


def options():
    """The jobs' `link_config.LinkOptions`, from the flags.

    Raises:
      ValueError: a value that cannot work, naming its flag.
    """
    return link_config.parse({name: FLAGS[name].value for name in link_config.SETTINGS})


def record(link_options):
    """The fields a study's record keeps of its jobs' link options."""
    # link_queue: the one queue there is now, so that records read as the older ones do.
    return {'link_queue': 'fair', 'port_buffer_bytes': link_options.port_buffer_bytes,
            'congestion_control': link_options.congestion_control or
                                  links.congestion_control()}

"""ConfigError, the one error a setting that cannot work raises, and the check that raises it."""


class ConfigError(ValueError):
    """A setting that cannot work; the message names the flag at fault."""


def require(condition, message, *args):
    """Raises ConfigError(message % args) unless `condition` holds."""
    if not condition:
        raise ConfigError(message % args)

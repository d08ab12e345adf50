"""ConfigError, the one error a setting that cannot work raises, and the checks that raise it."""


class ConfigError(ValueError):
    """A setting that cannot work; the message names the flag at fault."""


def require(condition, message, *args):
    """Raises ConfigError(message % args) unless `condition` holds."""
    if not condition:
        raise ConfigError(message % args)


def require_choice(section, field, choices):
    """Raises ConfigError('--<field> must be one of <choices>, got <value>') unless the value
    of `field` (an attribute of `section`, also its flag's name) is one of `choices`."""
    value = getattr(section, field)
    require(value in choices, '--%s must be one of %s, got %r', field, choices, value)


def require_at_least(section, minimum, *fields, optional=False):
    """Raises ConfigError('--<field> must be >= <minimum>, got <value>') for the first of
    `fields` (attribute names of `section`, each also its flag's name) whose value is below
    `minimum`. With `optional`, a field left None (unset) passes."""
    for field in fields:
        value = getattr(section, field)
        if not (optional and value is None):
            require(value >= minimum, '--%s must be >= %s, got %s', field, minimum, value)


def require_positive(section, *fields, optional=False):
    """Raises ConfigError('--<field> must be positive, got <value>') for the first of `fields`
    (attribute names of `section`, each also its flag's name) whose value is not > 0. With
    `optional`, a field left None (unset) passes."""
    for field in fields:
        value = getattr(section, field)
        if not (optional and value is None):
            require(value > 0, '--%s must be positive, got %s', field, value)

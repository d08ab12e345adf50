"""`--help` for a command: its own flags, in groups, instead of absl's short help.

absl's `--help` lists the flags of the main module only, and a console script (`tfhp`) or
`python -m tfhp` defines none there: it printed one line and no flag. Its full list,
`--helpfull`, mixes in absl's own flags and every library's. Here a command lists the flags it
defines, group by group, with their defaults; `--helpfull` stays absl's. It imports absl's
app only (absl's flag objects are only read), so a command's help imports no TensorFlow.
"""
import sys
import textwrap

from absl import app

# The spellings absl reads as a request for its short help (--help, -?, --helpshort), and -h.
HELP_ARGS = ('--help', '-help', '-?', '--helpshort', '-helpshort', '-h')

_NAME_COLUMN = 34


def asks_for_help(args):
    """Whether `args` (the command line after the program name) asks for help before any
    `--`."""
    for arg in args:
        if arg == '--':
            return False
        if arg in HELP_ARGS:
            return True
    return False


def grouped(module_flags, starts, hidden=()):
    """Splits a module's flags into its groups, leaving out aliases (another flag's spelling,
    absl's DEFINE_alias) and the flags named in `hidden`.

    Args:
      module_flags: the flags, in the order they were defined.
      starts: [(title, index of the group's first flag in module_flags)], in order.
      hidden: names of flags not to list (e.g. old spellings).
    Returns:
      [(title, [flag])].
    """
    ends = [start for _, start in starts[1:]] + [len(module_flags)]
    return [(title, [f for f in module_flags[start:end]
                     if f.name not in hidden and not _is_alias(f)])
            for (title, start), end in zip(starts, ends)]


def _is_alias(flag):
    # absl's DEFINE_alias makes a Flag of a class of its own, local to the function.
    return type(flag).__name__ == '_FlagAlias'


def _default_text(flag):
    value = flag.default
    if value is None or value == '' or value == []:
        return ''
    if isinstance(value, bool):
        return 'true' if value else 'false'
    if isinstance(value, list):
        return ','.join(str(v) for v in value)
    return str(value)


def _describe(flag):
    """The flag's help (absl's puts an enum's choices first: '<a|b>: ...') and its default."""
    text = flag.help.strip()
    default = _default_text(flag)
    if default:
        text += ' Default: %s.' % default
    return text


def _flag_lines(flag, width):
    name = '  --%s%s' % ('[no]' if flag.boolean else '', flag.name)
    indent = ' ' * _NAME_COLUMN
    lines = textwrap.wrap(_describe(flag), width=width, initial_indent=indent,
                          subsequent_indent=indent, break_on_hyphens=False)
    if len(name) < _NAME_COLUMN - 1:
        return [name + lines[0][len(name):]] + lines[1:]
    return [name] + lines


def format_help(usage, groups, width=100):
    """The help text: `usage`, then each group's title and its flags, one per line (wrapped).

    Args:
      usage: the lines before the groups (what the command is, how to call it).
      groups: [(title, [flag])], as `grouped` gives them.
      width: the line width to wrap the help at.
    Returns:
      The text, ending in a newline.
    """
    lines = [usage.rstrip(), '']
    for title, group in groups:
        lines.append('%s:' % title)
        for flag in group:
            lines += _flag_lines(flag, width)
        lines.append('')
    return '\n'.join(lines)


def parse(argv, usage, groups):
    """absl's parsing of `argv` (`app.parse_flags_with_usage`), except
    that a request for help prints `format_help(usage, groups)` and exits 0: absl's --help
    exits 1 and lists a console script's flags only under --helpfull. A command passes this as
    `app.run`'s flags_parser and imports TensorFlow only after it, so that help is quick."""
    if asks_for_help(argv[1:]):
        print(format_help(usage, groups))
        sys.exit(0)
    return app.parse_flags_with_usage(argv)

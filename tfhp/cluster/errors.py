"""The errors a cluster task ends with, and the cause of a runtime error in a few words.

Pure Python: the command line catches these errors before TensorFlow is imported.
"""
import re

from tfhp import config as config_lib

# Lines of a distributed runtime error that say where it happened, not what happened.
_WHERE = re.compile(r'^(Graph execution error|=+$|From /job|\[\[|Additional GRPC|:UNKNOWN|'
                    r'Detected at node|[A-Z_]+: From /job)')


class ClusterError(config_lib.ConfigError):
    """A peer that never answers, or a server that cannot start; names task and address."""


class PeerLost(RuntimeError):
    """A peer stopped answering or progressing during the job; names task and address."""


def cause(message, default='error'):
    """The line of a runtime error's message that says what happened, e.g. 'Socket closed'."""
    for line in message.splitlines():
        line = line.strip()
        if line and not _WHERE.match(line):
            return line[:200]
    return default

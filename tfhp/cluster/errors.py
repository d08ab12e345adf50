"""The errors a cluster task ends with. Pure Python: the command line catches them without TF."""
from tfhp import config as config_lib


class ClusterError(config_lib.ConfigError):
    """A peer that never answers, or a server that cannot start; names task and address."""


class PeerLost(RuntimeError):
    """A peer stopped answering or progressing during the job; names task and address."""

"""Variable managers. `make_variable_manager` is the only place strategy names are read."""
from tfhp.replication import parameter_server


def make_variable_manager(replication_config, topology):
    """Builds the VariableManager a ReplicationConfig names, for a Topology.

    Args:
      replication_config: a `tfhp.config.ReplicationConfig`.
      topology: a `tfhp.topology.Topology`.
    Returns:
      A `tfhp.replication.base.VariableManager`.
    """
    strategy = replication_config.variable_update
    if strategy == 'parameter_server':
        return parameter_server.ParameterServer(topology.tower_devices,
                                                topology.variable_devices)
    raise ValueError('unknown variable_update %r' % (strategy,))

"""Variable placement: which device holds each variable.

`GreedyByBytes` puts each new variable on the least-loaded device (by bytes). Creating the
largest variables first gives the classic greedy bound (loads within one largest variable of each
other); in creation order the bound still holds for the final loads' spread.
"""
import tensorflow.compat.v1 as tf

# Ops that create variable storage; everything else runs on the tower's device.
VARIABLE_OP_TYPES = frozenset(['Variable', 'VariableV2', 'VarHandleOp'])


def _num_bytes(node_def):
    shape = node_def.attr['shape'].shape
    size = 1
    for dim in shape.dim:
        size *= max(dim.size, 1)
    dtype = tf.as_dtype(node_def.attr['dtype'].type)
    return size * dtype.size


class GreedyByBytes:
    """Assigns each variable to the device with the fewest bytes so far.

    Args:
      devices: candidate device strings.
    """

    def __init__(self, devices):
        if not devices:
            raise ValueError('GreedyByBytes needs at least one device')
        self.devices = tuple(devices)
        self.loads = [0] * len(self.devices)
        self._placed = {}

    def place(self, node_def):
        """Returns the device for a variable op, remembering the choice by op name."""
        return self.assign(node_def.name, _num_bytes(node_def))

    def assign(self, name, num_bytes):
        """Returns the device for a variable `name` of `num_bytes`, remembering the choice (the
        step model places a profile's variables with this, as a job would)."""
        if name not in self._placed:
            index = min(range(len(self.loads)), key=self.loads.__getitem__)
            self.loads[index] += num_bytes
            self._placed[name] = self.devices[index]
        return self._placed[name]


def variables_on(placer, default_device):
    """A device function: variable ops go where `placer` says, all other ops to default_device."""
    def device_fn(op):
        node_def = op if isinstance(op, tf.NodeDef) else op.node_def
        if node_def.op in VARIABLE_OP_TYPES:
            return placer.place(node_def)
        return default_device
    return device_fn

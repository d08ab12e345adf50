"""Per-tower local copies of master variables, made by a custom getter.

Each trainable variable a tower asks for exists once as a master (a global, checkpointed
variable under its canonical name, placed by `master_device_fn`) and, per tower, as a local copy
on the tower's device that the tower computes with. A refresh copies masters to copies, reading
each master once per worker. Non-trainable variables (batch-norm statistics) are not copied:
every tower uses the master. Used by `DistributedReplicated` (masters on the ps tasks) and
`CollectiveWorkers` (masters on the worker's first tower device).

A variable asked for with a partitioner, or cut by the `slicing` given, is a
PartitionedVariable of slices, master and copies alike; each slice is a master of its own
(`masters`, `trainable_variables` and `master_of` speak of slices), so a large variable's slices
travel, and are refreshed, one by one.
"""
import contextlib
import functools

import tensorflow.compat.v1 as tf
# PartitionedVariable is not exported by tf.compat.v1.
from tensorflow.python.ops import variables as tf_variables  # pylint: disable=g-direct-tensorflow-import

from tfhp.replication import partitioning

COPIES_SCOPE = 'tower_copies'


class MasterCopies:
    """Builds and tracks the copies.

    Args:
      tower_devices: device of each tower.
      master_device_fn: device function placing master variables (ops other than variables
        that it is asked about go to the tower's device).
      copy_first_tower: False makes tower 0 use the masters themselves (masters already on its
        device); True gives tower 0 a copy too.
      slicing: slicing(shape, dtype) -> the rows of each slice along axis 0 that a trainable
        variable's master and copies are cut into (`partitioning.chunks_of`), or None to make
        it whole; None: every variable as asked for.
    """

    def __init__(self, tower_devices, master_device_fn, copy_first_tower=True, slicing=None):
        self._tower_devices = tuple(tower_devices)
        self._master_device_fn = master_device_fn
        self._copy_first_tower = copy_first_tower
        self._slicing = slicing
        self._copies = [dict() for _ in self._tower_devices]   # tower -> {name: copy}
        self._masters = {}                                      # name -> master
        self._trainable_masters = []
        self._master_of = {}                                    # copy name -> master

    @contextlib.contextmanager
    def tower_scope(self, tower):
        """Device and variable scope of tower `tower` (see base.VariableManager)."""
        def getter(getter, name, *args, **kwargs):
            trainable = kwargs.get('trainable') is not False
            rows = (self._slicing(kwargs['shape'], kwargs.get('dtype', tf.float32))
                    if trainable and self._slicing else None)
            if rows:
                getter = functools.partial(partitioning.sliced_variable, getter, rows=rows)
            with tf.device(self._master_device_fn):
                master = getter(name, *args, **kwargs)
            if name not in self._masters:
                self._masters[name] = master
                if trainable:
                    self._trainable_masters.extend(_slices(master))
            if not trainable or (tower == 0 and not self._copy_first_tower):
                return master
            if name not in self._copies[tower]:
                kwargs.update(initializer=tf.zeros_initializer(), trainable=False,
                              collections=[tf.GraphKeys.LOCAL_VARIABLES])
                copy = getter('%s/tower_%d/%s' % (COPIES_SCOPE, tower, name), *args,
                                    **kwargs)
                self._copies[tower][name] = copy
                for copy_slice, master_slice in zip(_slices(copy), _slices(master)):
                    self._master_of[copy_slice.op.name] = master_slice
            return self._copies[tower][name]

        with tf.device(self._tower_devices[tower]), tf.variable_scope(
                tf.get_variable_scope(), reuse=tf.AUTO_REUSE, custom_getter=getter):
            yield

    def trainable_variables(self, tower):
        """The trainable variables tower `tower` computes with, in creation order."""
        if tower == 0 and not self._copy_first_tower:
            return list(self._trainable_masters)
        return [s for copy in self._copies[tower].values() for s in _slices(copy)]

    def masters(self):
        """Every master variable (trainable or not; a partitioned one's slices), in creation
        order."""
        return [s for master in self._masters.values() for s in _slices(master)]

    def master_of(self, variable):
        """The master of a tower's variable (the variable itself if it is a master)."""
        return self._master_of.get(variable.op.name, variable)

    def refresh(self, read_device, masters=None, read=None):
        """An op copying masters into every tower's copy.

        Args:
          read_device: where each master is read to once (the worker's CPU); the copies are
            assigned from that value.
          masters: the master variables (slices) to refresh; None: every one.
          read: read(master) -> the value to copy, built on read_device (None: the master's
            own value; compressed downlink deltas copy what the workers were last sent).
        Returns:
          An op.
        """
        read = read or (lambda master: master.read_value())
        return self._to_copies(read_device, masters, read, 'assign', 'refresh_tower_copies')

    def add_deltas(self, read_device, masters, delta):
        """An op adding delta(master), built once on read_device, to every tower's copy of
        each of `masters` (compressed downlink deltas, `tfhp.replication.downlink`)."""
        return self._to_copies(read_device, masters, delta, 'assign_add',
                               'add_deltas_to_tower_copies')

    def _to_copies(self, read_device, masters, value_of, method, op_name):
        """An op giving each copy of `masters` (None: every one) copy.method(value_of(master)),
        the value built once per master on read_device."""
        wanted = None if masters is None else {m.op.name for m in masters}
        assigns = []
        for name, master in self._masters.items():
            copies = [_slices(c[name]) for c in self._copies if name in c]
            for index, master_slice in enumerate(_slices(master)):
                if not copies or (wanted is not None and master_slice.op.name not in wanted):
                    continue
                with tf.device(read_device):
                    value = tf.identity(value_of(master_slice))
                for copy in copies:
                    with tf.device(copy[index].device):
                        assigns.append(getattr(copy[index], method)(value, read_value=False))
        return tf.group(*assigns, name=op_name)


def _slices(variable):
    """The variables of a (possibly partitioned) variable."""
    return list(variable) if isinstance(variable, tf_variables.PartitionedVariable) else [
        variable]

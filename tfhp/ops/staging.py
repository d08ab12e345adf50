"""StagingArea buffers: put a set of tensors on a device in one step, get it in a later one.

A staging area is a small FIFO of tensor tuples living on one device. Putting copies the tensors
there (a host-to-device copy when the producer is on the host) and returns at once; getting takes
the oldest tuple. Joining two stages of a step through an area decouples them: within one
`session.run` the consumer reads what the producer put during the *previous* run, so the two
run concurrently on different steps' data (see `tfhp.pipelines.software_pipeline`, which owns
the warm-up-by-prefix rule).

TensorFlow's own area blocks forever when one gets from it while it is empty, and when one puts
into it while it is full. Here each get first checks the area's size and each put checks its
free room, on the area's device (a size read on another device is another, empty, area), so a
missing warm-up or a doubled one fails at once with a message naming the area instead of
hanging. The checks assume the contract of a pipelined step: one producer and one consumer per
area, each running once per `session.run`.
"""
import collections
import itertools

import tensorflow.compat.v1 as tf

# One set in the buffer between steps plus the one being put while the previous is taken.
DEFAULT_CAPACITY = 2

Staged = collections.namedtuple('Staged', [
    'put_op',    # puts this step's tensors (run every step, and in warm-up)
    'outputs',   # the tensors of an earlier put, same structure as the input
    'size',      # int32 scalar: how many sets the area holds now
    'clear_op',  # empties the area (e.g. before a new epoch or when shutting down)
    'name',      # the area's shared name, used in error messages
])


def host_of(device):
    """The CPU of the task that owns `device` (checks run there: Assert has CPU kernels only)."""
    spec = tf.DeviceSpec.from_string(device or '/cpu:0')
    return spec.replace(device_type='CPU', device_index=0).to_string()


_AREAS = itertools.count()  # numbers every area made in this process


class Area:
    """One staging area, known by its shared name: its ops are built where they are called.

    `stage` builds a put and a get side by side. A software pipeline whose stages run only in
    some steps (`software_pipeline.chain(group_size=...)`) builds its puts and gets inside a
    `tf.cond` branch and reads the size outside it; every op finds the same area by its shared
    name on `device`.

    Args:
      tensors: a nest of tensors with fully defined static shapes: the structure, dtypes and
        shapes of one set the area holds.
      device: device string of the area.
      name: base of the area's shared name (made unique in the graph).
      capacity: most sets the area may hold; a put into a full area fails.
      fill_hint: what the error of a get from the empty area tells the user to run first.
    Raises:
      ValueError: a tensor's shape is not fully defined (the consumer needs static shapes).
    """

    def __init__(self, tensors, device, name='staging_area', capacity=DEFAULT_CAPACITY,
                 fill_hint='run the warm-up before the first step'):
        flat = tf.nest.flatten(tensors)
        for t in flat:
            if not t.shape.is_fully_defined():
                raise ValueError('staging area %r: tensor %s has shape %s; staged tensors need '
                                 'a fully defined shape' % (name, t.name, t.shape))
        self._structure = tensors
        self._shapes = [t.shape for t in flat]
        self._device = device
        self._capacity = capacity
        self._fill_hint = fill_hint
        self.name = tf.get_default_graph().unique_name(name, mark_as_used=True)
        # Sessions of one process share the local devices' resources, so an area's shared name
        # is made unique in the process, not only in its graph: an area of an earlier graph
        # (holding sets it was never emptied of) is never found again.
        self._area = dict(dtypes=[t.dtype for t in flat], capacity=capacity,
                          shared_name='%s_%d' % (self.name, next(_AREAS)))

    def size(self):
        """An int32 scalar: how many sets the area holds now."""
        with tf.device(self._device):
            return tf.raw_ops.StageSize(**self._area, name='size')

    def put(self, sets):
        """An op putting each nest of `sets` (the area's structure) in order, each put checked
        for room first."""
        put_op = None
        for tensors in sets:
            with tf.control_dependencies([put_op] if put_op is not None else []):
                with tf.device(host_of(self._device)):
                    room = tf.debugging.Assert(
                        self.size() < self._capacity,
                        ['staging area %s already holds %d sets: a put would block (the '
                         'warm-up ran more often than the pipeline is deep?)'
                         % (self.name, self._capacity)], name='check_room')
            with tf.device(self._device), tf.control_dependencies([room]):
                put_op = tf.raw_ops.Stage(values=tf.nest.flatten(tensors),
                                          capacity=self._capacity,
                                          shared_name=self._area['shared_name'], name='put')
        return put_op

    def get(self):
        """The oldest set (a nest of the area's structure), checked to be there first."""
        with tf.device(host_of(self._device)):
            filled = tf.debugging.Assert(
                self.size() > 0,
                ['staging area %s is empty: a get would block (%s)'
                 % (self.name, self._fill_hint)], name='check_filled')
        with tf.device(self._device), tf.control_dependencies([filled]):
            got = tf.raw_ops.Unstage(**self._area, name='get')
        got = list(got) if isinstance(got, (list, tuple)) else [got]
        for out, shape in zip(got, self._shapes):
            out.set_shape(shape)
        return tf.nest.pack_sequence_as(self._structure, got)

    def clear(self):
        """An op emptying the area."""
        with tf.device(self._device):
            return tf.raw_ops.StageClear(**self._area, name='clear')


def stage(tensors, device, name='staging_area', capacity=DEFAULT_CAPACITY,
          fill_hint='run the warm-up before the first step'):
    """Builds a staging area on `device` fed with `tensors`.

    Args:
      tensors: a nest (tuple, list, dict) of tensors with fully defined static shapes.
      device: device string of the area, e.g. '/cpu:0' or '/gpu:1'.
      name: base of the area's shared name (made unique in the graph).
      capacity: most sets the area may hold; a put into a full area fails.
      fill_hint: what the error of a get from the empty area tells the user to run first.
    Returns:
      A `Staged` tuple.
    Raises:
      ValueError: a tensor's shape is not fully defined (the consumer needs static shapes).
    """
    area = Area(tensors, device, name, capacity, fill_hint)
    with tf.name_scope(area.name):
        put_op = area.put([tensors])
        outputs = area.get()
        size = area.size()
        clear_op = area.clear()
    return Staged(put_op=put_op, outputs=outputs, size=size, clear_op=clear_op, name=area.name)

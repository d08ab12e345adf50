"""Staged variable reads (`--staged_vars`): parameter copies hidden behind compute.

Each tower reads every trainable variable through a staging area on its own device
(`tfhp.ops.staging`), so the copy from the parameter device runs during the previous step
instead of at the start of this one. The protocol:

  1. Prime (the manager's `post_init_ops`, once after initialisation or restore): put each
     variable's value into each tower's area.
  2. Every step: each tower's forward pass gets the value put one step earlier; after that get
     the step puts (refills) the variable's current value for the next step; the update waits
     until those puts have read the variable, so they see it before this step's update.

So the weights a step reads are one update old: w_1 = w_0 - lr g(w_0), and for k >= 1
w_{k+1} = w_k - lr g(w_{k-1}). This is SGD with a one-step-stale gradient, not plain SGD: the
same loss curve is not expected, and a high learning rate or momentum may need lowering.
(Tested against that recurrence in tests/replication/staged_vars_test.py.)

Between graphs (a `ParameterServer` placement under `SyncReplicas` or `AsyncReplicas`) each
worker's areas sit on its own devices: a worker-side copy of the ps variables, refilled every
step before the worker sends its gradient (`VariableManager.shared_gradients` hands the refills
to the update). Each worker primes its own areas once the chief has initialised or restored the
variables. Synchronous steps tag a gradient with the step it is sent for, not the older step
its weights come from, so the staleness the staging makes drops no gradient and every replica
follows the recurrence above with the mean of the replicas' gradients; asynchronous workers
never see their own last update. The protocols are in sync_replicas.py and async_replicas.py
(tested in tests/cluster/staged_vars_test.py).
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.ops import staging


class StagedReads:
    """Creates and remembers the staging areas of every (tower, variable) pair.

    Args:
      read_device: where the areas of every tower get a variable's value from, so that one
        read per variable and step crosses to it (a between-graph worker's CPU, whatever its
        number of towers); None: each area reads the variable itself.
    """

    def __init__(self, read_device=None):
        self._read_device = read_device
        self._values = {}    # variable name -> its read on read_device
        self._reads = {}     # tower -> [staged read tensor], in creation order
        self._sources = {}   # staged read tensor name -> the variable it reads
        self._primes = []    # a put per area, run once (post_init_ops)
        self._refills = []   # a put per area, run every step after the area's get

    def custom_getter(self, tower, device):
        """A variable-scope custom getter for tower `tower`, whose areas live on `device`."""
        # Captured now: the getter runs inside the model's own name scopes.
        scope = tf.get_default_graph().get_name_scope()
        staging_scope = '%s/%s/' % (scope, scopes.STAGING) if scope else scopes.STAGING + '/'
        def staged_getter(getter, *args, **kwargs):
            variable = getter(*args, **kwargs)
            if not variable.trainable:
                return variable  # e.g. batch-norm statistics: updated in place, read directly
            with tf.name_scope(staging_scope):
                value = self._value(variable)
                area = staging.Area(
                    [value], device, name='staged_var',
                    fill_hint='run the post_init_ops of the variable manager '
                              '(prime_staged_vars) after initialising or restoring the '
                              'variables')
                with tf.name_scope(area.name):
                    prime = area.put([[value]])
                    got = area.get()[0]
                    # The step's refill after its get: a refill that ran first would fill an
                    # unprimed area, and the get's emptiness check would miss it.
                    with tf.control_dependencies([got]):
                        refill = area.put([[value]])
                # Named after the variable, so name-based rules (e.g. no L2 decay on biases)
                # treat the read like the variable.
                with tf.device(device):
                    read = tf.identity(got, name=variable.op.name)
            self._reads.setdefault(tower, []).append(read)
            self._sources[read.name] = variable
            self._primes.append(prime)
            self._refills.append(refill)
            return read
        return staged_getter

    def _value(self, variable):
        """The value a refill puts: read on the variable's device (and once for every tower
        on read_device)."""
        if variable.name in self._values:
            return self._values[variable.name]
        with tf.device(variable.device):
            value = variable.read_value()
        if self._read_device is not None:
            with tf.device(self._read_device):
                value = tf.identity(value)
            self._values[variable.name] = value
        return value

    def reads(self, tower):
        """Tower `tower`'s staged reads of the trainable variables, in creation order."""
        return list(self._reads.get(tower, []))

    def variable(self, read):
        """The variable a staged read stands for."""
        return self._sources[read.name]

    def prime_ops(self):
        """A put per area, to run once after initialising or restoring the variables."""
        return list(self._primes)

    def refill_ops(self):
        """Each step's put per area (after the area's get); the update must wait for them."""
        return list(self._refills)

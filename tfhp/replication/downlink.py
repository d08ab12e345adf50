"""Compressed downlink deltas: the variables a ps sends back to its workers, compressed.

Once gradients go up compressed, the float32 variables coming back down are the floor of a
parameter-server step (a 29x smaller upload left the step at the ps's variable bytes). Here the
downlink carries, per variable, a compressed delta instead of the value.

Per master variable m (on its ps task):
  - `published` p, a variable beside m: the value every worker's copies hold. It starts as m's
    initial value and is checkpointed with m.
  - The chief, once it has applied a step to m and before it releases m's step tokens:
    payload = compress(m - p), kept in payload variables beside m; then p += decompress(payload).
  - Every worker, once it holds m's token: its copies += decompress(payload), the payload read
    once to its CPU. Only the payload crosses the link.
So the copies and p stay equal (the same float additions of the same payloads), and m - p is
what the payloads have left out so far, which the next deltas carry: error feedback by
construction, whatever the scheme's own `error_feedback` says (a scheme's residual and
momentum are for senders of gradients; the downlink uses `compress` alone).

Every worker must apply every step's payload exactly once, or its copies drift from p. So each
step waits for every replica (the config refuses spare replicas), and a worker that starts or
restarts fills its copies from p. The chief overwrites the payload of step g only at step g+1,
which needs every worker's gradient of g+1, sent after that worker read the payload of g.
A worker that (re)starts while the chief is between its apply and its publish of a step fills
from the value before that step's delta but takes the step after it; so the first pull of each
session copies p instead of adding the payload (`DistributedReplicated`; one float32 read of
the variables per session): once its token is there p holds that step, and the next publish
needs this worker's next gradient.
"""
import tensorflow.compat.v1 as tf

from tfhp.ops import scopes


class Downlink:
    """The published values and payloads of compressed downlink deltas (module doc).

    Args:
      compressor: the `tfhp.compression` scheme the deltas travel in.
    """

    def __init__(self, compressor):
        self._compressor = compressor
        self._state = {}  # master name -> (published, [payload variables])

    def published(self, master):
        """The variable holding what the workers' copies of `master` hold."""
        return self._state_of(master)[0]

    def publish(self, master):
        """The chief's op, built after the op that applies a step to `master` (under the
        caller's control dependencies): the compressed delta stored for the workers, and the
        published value moved by what it carries."""
        published, payload_vars = self._state_of(master)
        with tf.name_scope(scopes.APPLY), tf.device(master.device):
            payload = self._compress(master, published)
            stored = [v.assign(t, read_value=False) for v, t in zip(payload_vars, payload)]
            sent = self._decompress(payload, master)
            moved = published.assign_add(sent, read_value=False)
            return tf.group(stored + [moved], name='publish_downlink_delta')

    def delta(self, master, read_device):
        """What a worker adds to its copies of `master` this step: the stored payload read
        once to `read_device` and decompressed there."""
        _, payload_vars = self._state_of(master)
        with tf.device(read_device):
            payload = [tf.identity(v.read_value()) for v in payload_vars]
            return self._decompress(payload, master)

    def _compress(self, master, published):
        """compress(master - published), as a list of tensors."""
        return tf.nest.flatten(self._compressor.compress(master.read_value() -
                                                         published.read_value()))

    def _decompress(self, payload, master):
        """The delta a list of payload tensors carries (one tensor, or the scheme's tuple)."""
        payload = payload[0] if len(payload) == 1 else tuple(payload)
        return self._compressor.decompress(payload, master.dtype.base_dtype, master.shape)

    def _state_of(self, master):
        """(published, payload variables) of `master`, made beside it on first use. Every
        worker makes them in the same order, so their names (and the ps's variables) agree."""
        name = master.op.name
        if name not in self._state:
            with tf.device(master.device), tf.name_scope(None):
                # One run of the initializers computes the master's initial value once, so p
                # starts equal to m even when that value is drawn at random.
                published = tf.Variable(master.initial_value, trainable=False,
                                        name=name + '/downlink_published')
                # Only the payload's shapes and dtypes are taken from this (unrun) graph.
                shapes = self._compress(master, published)
                payload_vars = [
                    tf.Variable(tf.zeros(t.shape, t.dtype), trainable=False,
                                name='%s/downlink_payload_%d' % (name, i))
                    for i, t in enumerate(shapes)]
            self._state[name] = (published, payload_vars)
        return self._state[name]

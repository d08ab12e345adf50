"""The interface every input pipeline implements, and the value it returns.

A pipeline hands the step builder one (images, labels) pair per tower, already on that tower's
device, plus the ops that keep its stages full. A software-pipelined input (stages joined by
staging areas) is a prefix protocol: before the first step the session runs `warmup_ops[:1]`,
then `warmup_ops[:2]`, ..., each call filling one more staging area; after that one
`session.run` of the train op (which includes every `put_op`) runs all stages at once, each on
a different step's data.
"""
import abc
import collections

InputBatches = collections.namedtuple('InputBatches', [
    'batches',     # batches[t] = (images, labels) on tower t's device
    'put_ops',     # run with every step: each refills the staging area it feeds
    'warmup_ops',  # ordered; warm-up runs warmup_ops[:k+1] for k = 0, 1, ...
])


class Pipeline(abc.ABC):
    """Produces per-tower batches for a Topology."""

    @abc.abstractmethod
    def tower_batches(self, topology):
        """Builds the input ops for every tower of `topology`.

        Args:
          topology: a `tfhp.topology.Topology`.
        Returns:
          An `InputBatches`.
        """

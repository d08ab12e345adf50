"""Random-k: each step sends k elements drawn uniformly without replacement, with error
feedback.

Same payload and bytes as top-k (values and indices, 2% of a float32 gradient at the default
1%), a different choice: it costs no sort, and is the baseline that shows what top-k's choice
of the largest elements is worth.

Error feedback, not unbiased scaling: scaling the kept values by n / k makes the payload's
expectation the gradient, but multiplies its variance by about n / k (100 at 1%), far more
noise than SGD's own at any useful learning rate. With error feedback the elements left out
stay in the residual and go out, accumulated, when they are drawn (on average every n / k
steps): nothing is lost, only late, and the step's size stays the gradient's (Stich et al.
2018, "Sparsified SGD with Memory", which proves both top-k and random-k with memory converge
at SGD's rate).

Each tower draws its own indices (its own op seed, from the graph's seed), so two towers send
different elements. The indices travel with the values; a seed shared by sender and receiver
could replace them and halve the bytes, at the cost of a payload that no longer says what it
holds.
"""
import tensorflow.compat.v1 as tf

from tfhp.compression import sparse


class RandomK(sparse.Sparse):
    """k = ceil(fraction * n) elements of each gradient drawn at random, with error feedback.

    Args:
      fraction: the share of elements sent.
    """
    name = 'randomk'

    def __init__(self, fraction=0.01):
        super().__init__(fraction, error_feedback=True)

    def _select(self, flat, k):
        n = flat.shape.num_elements()
        return tf.random.shuffle(tf.range(n, dtype=sparse.INDEX_DTYPE))[:k]

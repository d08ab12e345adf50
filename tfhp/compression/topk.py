"""Top-k: each step sends the k elements of largest magnitude (values and indices).

k is a fraction of the gradient's elements, 1% by default: 2% of a float32 gradient's bytes
(`tfhp.compression.sparse`). With error feedback ('topk') the elements left out accumulate in
the residual until they are large enough to be sent (Stich et al. 2018, "Sparsified SGD with
Memory"; Lin et al. 2018, "Deep Gradient Compression"); without it ('topk_noef') they are
dropped every step, so a component that is never among the largest never moves its weight.
"""
import tensorflow.compat.v1 as tf

from tfhp.compression import sparse


class TopK(sparse.Sparse):
    """The k = ceil(fraction * n) largest magnitudes of each gradient.

    Args:
      fraction: the share of elements sent.
      error_feedback: keep a residual per gradient ('topk'); False: 'topk_noef'.
    """

    def __init__(self, fraction=0.01, error_feedback=True):
        super().__init__(fraction, error_feedback)
        self.name = 'topk' if error_feedback else 'topk_noef'

    def _select(self, flat, k):
        return tf.math.top_k(tf.abs(flat), k, sorted=False).indices

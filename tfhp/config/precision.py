"""PrecisionConfig: the dtype towers compute in, where variables are stored, loss scaling."""
import dataclasses
from typing import Optional

from tfhp.config import errors

COMPUTE_DTYPES = ('float32', 'float16', 'bfloat16')
# tf_cnn_benchmarks' loss scale for float16 when --fp16_loss_scale is not given (every model).
DEFAULT_FP16_LOSS_SCALE = 128.0


@dataclasses.dataclass(frozen=True)
class PrecisionConfig:
    """The dtype towers compute in, where variables are stored, and loss scaling.

    Mixed precision as tf_cnn_benchmarks does it: variables are stored in float32 (the master
    copies the optimizer updates) and cast to the compute dtype where a tower reads them;
    batch-norm parameters and statistics, the loss and the L2 term stay float32.

    Attributes:
      use_fp16: compute in float16 (tf_cnn_benchmarks' flag; the same as
        compute_dtype='float16').
      compute_dtype: 'float32', 'float16' or 'bfloat16' (bfloat16 keeps float32's exponent
        range, so it needs no loss scaling).
      fp16_loss_scale: float16: multiply the loss by this before the gradients and divide the
        gradients by it after, so small gradients do not underflow; None: 128 (the reference
        benchmarks' default), or the first scale of the automatic one. 1 disables it.
      fp16_enable_auto_loss_scale: float16: halve the scale and skip the update on a step
        whose gradients are not finite; double it after fp16_inc_loss_scale_every_n finite
        steps in a row.
      fp16_inc_loss_scale_every_n: see fp16_enable_auto_loss_scale.
      fp16_vars: float16: store the variables in float16 too (not batch norm's, whose kernel
        takes float32 parameters); the optimizer then updates float16 weights.
      compact_gradient_transfer: float16: all-reduce gradients in float16 (the all-reduce
        variable updates only; `--gradient_transfer_dtype` set explicitly wins).
    """
    use_fp16: bool = False
    compute_dtype: str = 'float32'
    fp16_loss_scale: Optional[float] = None
    fp16_enable_auto_loss_scale: bool = False
    fp16_inc_loss_scale_every_n: int = 1000
    fp16_vars: bool = False
    compact_gradient_transfer: bool = True

    def __post_init__(self):
        errors.require_choice(self, 'compute_dtype', COMPUTE_DTYPES)
        errors.require(not self.use_fp16 or self.compute_dtype in ('float32', 'float16'),
                       '--use_fp16 computes in float16; it contradicts --compute_dtype=%s',
                       self.compute_dtype)
        errors.require_positive(self, 'fp16_loss_scale', optional=True)
        errors.require_at_least(self, 1, 'fp16_inc_loss_scale_every_n')
        for flag, used in (('fp16_loss_scale', self.fp16_loss_scale is not None),
                           ('fp16_enable_auto_loss_scale', self.fp16_enable_auto_loss_scale),
                           ('fp16_vars', self.fp16_vars)):
            errors.require(not used or self.dtype == 'float16',
                           '--%s applies to float16 compute (--use_fp16); this run computes in '
                           '%s', flag, self.dtype)

    @property
    def dtype(self):
        """The dtype towers compute in: 'float32', 'float16' or 'bfloat16'."""
        return 'float16' if self.use_fp16 else self.compute_dtype

    @property
    def variable_dtype(self):
        """The dtype trainable weights are stored in."""
        return 'float16' if self.fp16_vars else 'float32'

    @property
    def loss_scale(self):
        """The (first) loss scale of a training step, or None when the loss is not scaled."""
        if self.dtype != 'float16':
            return None
        scale = self.fp16_loss_scale or DEFAULT_FP16_LOSS_SCALE
        return None if scale == 1 and not self.fp16_enable_auto_loss_scale else scale

    @property
    def compact_transfer(self):
        """Whether gradients are all-reduced in float16 because this run computes in it."""
        return self.dtype == 'float16' and self.compact_gradient_transfer

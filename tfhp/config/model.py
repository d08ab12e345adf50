"""ModelConfig: which network, at which size and layout."""
import dataclasses
from typing import Optional

from tfhp.config import errors
from tfhp.emulation import profile as profile_lib

DATA_FORMATS = ('NHWC', 'NCHW')


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Which network, at which size and layout.

    Attributes:
      name: registry name (`tfhp.models.registry.names()`).
      batch_size: per-tower batch size; None takes the model's default.
      image_size: square input size; None takes the model's default.
      num_classes: output classes (1000 for ImageNet-like synthetic data).
      data_format: 'NHWC' or 'NCHW'.
      fuse_batchnorm: fused batch-norm kernel (True) or composite ops (False).
      emulated_compute: a compute profile (`tfhp.emulation.profile`, written by
        `python -m tfhp.calibrate`): the towers build the model's variables and wait each
        layer's time instead of computing it ('': the real model).
      layer_slice_bytes: dense layers whose weights take more bytes are built as column
        slices of at most this many bytes, each its own variable and matmul
        (`tfhp.models.slices`), the emulated model's too; 0: never.
    """
    name: str = 'trivial'
    batch_size: Optional[int] = None
    image_size: Optional[int] = None
    num_classes: int = 1000
    data_format: str = 'NHWC'
    fuse_batchnorm: bool = True
    emulated_compute: str = ''
    layer_slice_bytes: int = 0

    def __post_init__(self):
        errors.require_positive(self, 'batch_size', 'image_size', optional=True)
        errors.require_at_least(self, 0, 'layer_slice_bytes')
        errors.require(self.num_classes > 1, '--num_classes must be at least 2, got %s',
                       self.num_classes)
        errors.require_choice(self, 'data_format', DATA_FORMATS)
        if self.emulated_compute:
            profile = self.compute_profile
            errors.require(profile.model == self.name,
                           '--emulated_compute=%s profiles --model=%s, not --model=%s',
                           self.emulated_compute, profile.model, self.name)
            errors.require(self.batch_size in (None, profile.batch_size),
                           '--emulated_compute=%s holds the times of batch %d per tower; drop '
                           '--batch_size=%d (or calibrate that batch)', self.emulated_compute,
                           profile.batch_size, self.batch_size)

    @property
    def compute_profile(self):
        """The `ComputeProfile` of --emulated_compute (None without one), its layers sliced as
        --layer_slice_bytes slices the model's."""
        if not self.emulated_compute:
            return None
        try:
            return profile_lib.load(self.emulated_compute).sliced(self.layer_slice_bytes)
        except ValueError as e:
            raise errors.ConfigError('--emulated_compute: %s' % e) from None

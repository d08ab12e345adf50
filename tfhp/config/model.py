"""ModelConfig: which network, at which size and layout."""
import dataclasses
from typing import Optional

from tfhp.config import errors

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
    """
    name: str = 'trivial'
    batch_size: Optional[int] = None
    image_size: Optional[int] = None
    num_classes: int = 1000
    data_format: str = 'NHWC'
    fuse_batchnorm: bool = True

    def __post_init__(self):
        errors.require_positive(self, 'batch_size', 'image_size', optional=True)
        errors.require(self.num_classes > 1, '--num_classes must be at least 2, got %s',
                       self.num_classes)
        errors.require_choice(self, 'data_format', DATA_FORMATS)

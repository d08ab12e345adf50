"""EvalConfig: evaluation batches, and evaluating while training (to an accuracy)."""
import dataclasses
from typing import Optional

from tfhp.config import errors


@dataclasses.dataclass(frozen=True)
class EvalConfig:
    """How evaluation runs: alone (--eval) or between training steps.

    Attributes:
      eval_during_training_every_n_steps: pause training every this many steps, evaluate the
        current weights on the validation set, go on (the evaluation is not timed).
      eval_during_training_every_n_epochs: the same every this many epochs of training data.
      num_eval_batches: evaluation steps per evaluation; None: --num_batches.
      eval_batch_size: evaluation batch per device; None: the training batch size.
      stop_at_top_1_accuracy: stop training at the first evaluation whose top-1 accuracy
        reaches this.
    """
    eval_during_training_every_n_steps: Optional[int] = None
    eval_during_training_every_n_epochs: Optional[float] = None
    num_eval_batches: Optional[int] = None
    eval_batch_size: Optional[int] = None
    stop_at_top_1_accuracy: Optional[float] = None

    def __post_init__(self):
        errors.require_positive(self, 'eval_during_training_every_n_steps',
                                'eval_during_training_every_n_epochs', 'num_eval_batches',
                                'eval_batch_size', optional=True)
        errors.require(not (self.eval_during_training_every_n_steps and
                            self.eval_during_training_every_n_epochs),
                       '--eval_during_training_every_n_steps and '
                       '--eval_during_training_every_n_epochs both set the interval; use one')
        errors.require(self.stop_at_top_1_accuracy is None or self.during_training,
                       '--stop_at_top_1_accuracy needs --eval_during_training_every_n_steps '
                       'or --eval_during_training_every_n_epochs')
        errors.require(self.stop_at_top_1_accuracy is None or
                       0 < self.stop_at_top_1_accuracy <= 1,
                       '--stop_at_top_1_accuracy must be in (0, 1], got %s',
                       self.stop_at_top_1_accuracy)

    @property
    def during_training(self):
        """Whether training pauses to evaluate."""
        return bool(self.eval_during_training_every_n_steps or
                    self.eval_during_training_every_n_epochs)

"""RunConfig: how long to run, what to print and where to write."""
import dataclasses
from typing import Optional

from tfhp.config import errors


@dataclasses.dataclass(frozen=True)
class RunConfig:
    """How long to run, what to print and where to write.

    Attributes:
      num_batches: timed steps.
      num_epochs: train for this many epochs of the training set instead (tf_cnn_benchmarks'
        alternative to num_batches), counting every training step, warm-up included:
        `tfhp.runner.resolve.resolve_epochs` turns it into num_batches (the steps less the
        warm-up's) once the data set and global batch are known. None: num_batches is used.
      num_warmup_batches: untimed steps first (graph optimisation, allocator warm-up).
      display_every: print a progress line every this many steps.
      tf_random_seed: seed of every random op (synthetic data, initialisers, shuffling).
      deterministic: two runs of one seed and the same flags compute the same losses: the
        input pipelines read and augment in an order the seed fixes (`tfhp.pipelines`'
        `deterministic`, slower), and the `tfhp` command turns on TensorFlow's op determinism.
        Between graphs only a synchronous job without spare replicas repeats
        (`determinism_caveat`).
      train_dir: checkpoints are written here and a run resumes from the latest one.
      save_model_steps: also checkpoint every this many steps (None: only at the end).
      eval: evaluate the checkpoint in train_dir (top-1/top-5) instead of training.
      forward_only: time inference instead of training: the forward pass alone, in inference
        mode (batch norm's moving statistics, no dropout), from a checkpoint in train_dir if
        there is one, else from the initial weights.
      print_training_accuracy: compute and print top-1/top-5 of training batches.
      result_file: append one JSON line per run here.
      max_ckpts_to_keep: checkpoints kept in train_dir, oldest deleted first; 0 keeps every one
        (experiments evaluate each of them afterwards).
      target_global_step: synchronous between-graph workers end at this global step, however
        often the job was restarted from a checkpoint (0: at the step the chief started from +
        warm-up + num_batches).
      progress_file: the chief appends 'global_step loss' here after every step, so a
        supervisor can tell how far a job got before it failed, and the attempts of a
        recovered job leave one loss curve.
    """
    num_batches: int = 100
    num_epochs: Optional[float] = None
    num_warmup_batches: int = 10
    display_every: int = 10
    tf_random_seed: int = 1234
    deterministic: bool = False
    train_dir: Optional[str] = None
    save_model_steps: Optional[int] = None
    eval: bool = False
    forward_only: bool = False
    print_training_accuracy: bool = False
    result_file: Optional[str] = None
    max_ckpts_to_keep: int = 3
    target_global_step: int = 0
    progress_file: Optional[str] = None

    def __post_init__(self):
        errors.require_at_least(self, 0, 'max_ckpts_to_keep', 'num_warmup_batches',
                                'target_global_step')
        errors.require_at_least(self, 1, 'num_batches', 'display_every')
        errors.require_at_least(self, 1, 'save_model_steps', optional=True)
        errors.require(self.save_model_steps is None or self.train_dir,
                       '--save_model_steps needs --train_dir')
        errors.require(not self.eval or self.train_dir,
                       '--eval needs --train_dir (the checkpoint to evaluate)')
        errors.require_positive(self, 'num_epochs', optional=True)
        errors.require(not (self.forward_only and self.eval),
                       '--forward_only and --eval are two modes; use one')
        errors.require(not (self.forward_only and self.save_model_steps),
                       '--forward_only trains nothing; drop --save_model_steps')

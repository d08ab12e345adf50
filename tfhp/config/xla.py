"""XlaConfig: compiling the step with XLA."""
import dataclasses


@dataclasses.dataclass(frozen=True)
class XlaConfig:
    """Compiling the step with XLA (tf_cnn_benchmarks' two flags).

    Attributes:
      xla_compile: compile each tower's forward and backward pass (every op of the tower is
        marked for compilation; the input pipeline and the variable update stay outside); with
        --eval or --forward_only, its forward pass.
      xla: auto-clustering: the session's global JIT level (ON_1) lets TensorFlow pick the
        clusters it compiles, anywhere in the graph.
    """
    xla_compile: bool = False
    xla: bool = False

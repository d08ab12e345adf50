"""Where a parameter-server job puts a profile's variables, so the step model can load each ps
task with the bytes it really holds (and where a replicated job without NCCL sums each
gradient, `round_robin_gradient_bytes`).

tfhp places variables in creation order on the ps task with the fewest bytes so far
(`device_setters.GreedyByBytes`; batch-norm statistics count, though only trainable variables
move each step), and with --partition_min_bytes first splits each variable of at least that
many bytes along its first axis into one slice per ps (`tf.fixed_size_partitioner`: the first
dim % K slices one row longer). A greedy placement is balanced within one variable, which is
not balanced for a small model: resnet20's variables on 3 ps tasks leave the busiest with 1.24
times its third of the gradient bytes.
"""
from tfhp.replication import device_setters


def _slices(variable, num_ps, partition_min_bytes):
    """(name, bytes) of the variables a job creates for `variable`: itself, or its slices."""
    if not (partition_min_bytes and num_ps > 1 and variable.shape
            and variable.num_bytes >= partition_min_bytes):
        return [(variable.name, variable.num_bytes)]
    rows = variable.shape[0]
    row_bytes = variable.num_bytes // rows
    return [('%s/part_%d' % (variable.name, k), row_bytes * (rows // num_ps + (k < rows % num_ps)))
            for k in range(min(num_ps, rows))]


def ps_gradient_bytes(profile, num_ps, partition_min_bytes=0):
    """The trainable bytes each of `num_ps` ps tasks holds (a list, by task) when a job places
    the profile's variables: what each ps receives from every worker per step, and sends back.

    Args:
      profile: a `tfhp.emulation.profile.ComputeProfile` (variables in creation order).
      num_ps: K, the ps tasks.
      partition_min_bytes: the job's --partition_min_bytes (0: no variable is split).
    """
    placer = device_setters.GreedyByBytes(range(num_ps))
    held = [0] * num_ps
    for layer in profile.layers:
        for variable in layer.variables:
            for name, num_bytes in _slices(variable, num_ps, partition_min_bytes):
                task = placer.assign(name, num_bytes)
                if variable.trainable:
                    held[task] += num_bytes
    return held


def round_robin_gradient_bytes(profile, num_devices):
    """The trainable bytes each of `num_devices` devices sums when gradient i is summed on
    device i % num_devices (tf_cnn_benchmarks' replicated mode without NCCL, its gradients
    copied to that device and the sum copied back): a list, by device."""
    held = [0] * num_devices
    trainable = [v for layer in profile.layers for v in layer.variables if v.trainable]
    for i, variable in enumerate(trainable):
        held[i % num_devices] += variable.num_bytes
    return held

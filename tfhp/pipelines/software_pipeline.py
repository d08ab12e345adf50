"""Software pipelining: stages joined by staging areas, all run by one `session.run` per step.

A chain of stages A -> S1 -> B -> S2 -> C, where S1 and S2 are buffers (one staging area per
device, `tfhp.ops.staging`), lets one `session.run` work on several steps' data at once: A reads
the data of step k+2 into S1 while B takes step k+1's data out of S1, preprocesses it and puts
it into S2, while C (the model, outside this module) computes on step k's data from S2. A step
then costs about the time of its slowest stage rather than the sum of all.

Protocol (what `Chain` returns and the caller must follow):

  1. Warm-up by prefix. Before the first step the buffers must each hold one set of data; run
     `warmup_ops[:1]` (A fills S1), then `warmup_ops[:2]` (A refills S1 while B moves the first
     set into S2), ... one call per buffer (`tfhp.session.warm_up` does this). Afterwards
     every buffer holds exactly one set (read `sizes`, or `sizes_by_name`, to see it; and
     `tfhp.profiling.stepping.step_through(..., sizes=sizes_by_name(chain))` records them after
     each prefix). Running a prefix twice
     overfills a buffer, which fails naming it; skipping the warm-up makes the first get fail,
     naming its buffer.
  2. Steps. Each step runs every op in `put_ops` together with the consumer; every buffer then
     gives one set and takes one, so it still holds one set between steps and at most one
     extra while a step runs. Step k's consumer sees the data the source produced at run k
     (counting warm-up runs from 0): the pipeline is `len(put_ops)` steps deep.
  3. Drain (for a finite source, or to use up what is buffered): run the consumer with
     `drain_ops[0]`, then with `drain_ops[1]`, ...: the suffixes of `put_ops` that no longer
     call the source; afterwards every buffer is empty. `clear_op` drops the buffered data.

With `staged=False` the stages are chained directly (no buffers, nothing to warm up): one
`session.run` runs A, B and C one after another on the same data, the reference the pipelined
step is measured against.

Groups of steps (`group_size=G > 1`, tf_cnn_benchmarks' --batch_group_size): each stage runs
once every G runs and handles G steps' data at once, so its per-run overhead (an op launch, a
RecordInput read, a stack) is paid once per G steps. Stage i's puts sit in a `tf.cond` on a
counter of its own and run at the runs r (counted from the first warm-up run, 0) with
(r - i) mod G == 0; the last stage returns, per group, a list of G nests, put one after
another into its buffer, from which the consumer still takes one set per step. The warm-up is
the same prefixes; afterwards the earlier buffers hold one group or none and the last holds G
sets (up to G + 1 while a step runs). Step k still sees the data of the source's k-th set (in
order within a group), so the consumer computes what it computes with G = 1. A grouped chain
has no drain ops (its buffers hold up to G sets, not one).
"""
import collections

import tensorflow.compat.v1 as tf

from tfhp.ops import scopes
from tfhp.ops import staging

Chain = collections.namedtuple('Chain', [
    'outputs',     # what the last stage produced, as read from the last buffer: one nest per group
    'put_ops',     # one grouped op per buffer, in stage order; run all of them every step
    'warmup_ops',  # the same ops: run warmup_ops[:k+1] for k = 0, 1, ... (see module docstring)
    'drain_ops',   # drain_ops[k] = put_ops[k+1:]: run each with the consumer to empty the buffers
    'sizes',       # sizes[i] = [size tensor of each device's area of buffer i]
    'names',       # names[i] = [name of each device's area of buffer i], as in `sizes`
    'clear_op',    # empties every buffer
])

Group = collections.namedtuple('Group', [
    'device',   # where this group's staging area lives (and its consumer reads it)
    'tensors',  # a nest of tensors with static shapes
])


def chain(stages, staged=True, name='pipeline', group_size=1):
    """Builds stages, each followed by one buffer, and returns the protocol's ops.

    Args:
      stages: callables; `stages[0]()` returns the source's groups and `stages[i](nests)` maps
        the previous buffer's outputs (one nest per group of the previous stage, in order) to
        this stage's groups. Each stage returns a list of `Group`s; each group gets its own
        staging area on its device. A stage builds its own ops under its own name scopes.
      staged: put a buffer after every stage (True) or chain the stages directly (False).
      name: prefix of the staging areas' names.
      group_size: steps each stage handles per run (see the module docstring); with more
        than 1 the last stage's `Group.tensors` is a list of group_size nests, and `staged`
        must be True.
    Returns:
      A `Chain`. When `staged` is False its op lists are empty and `outputs` are the last
      stage's tensors.
    Raises:
      ValueError: group_size > 1 without staging (nothing would hold the group's sets).
    """
    if group_size > 1:
        if not staged:
            raise ValueError('a group of %d steps needs staging areas to hold it' % group_size)
        return _grouped_chain(stages, group_size, name)
    outputs, put_ops, sizes, names, clears = None, [], [], [], []
    for index, stage_fn in enumerate(stages):
        groups = stage_fn() if index == 0 else stage_fn(outputs)
        if not staged:
            outputs = [g.tensors for g in groups]
            continue
        staged_groups = []
        with tf.name_scope(scopes.STAGING):
            for g, group in enumerate(groups):
                staged_groups.append(staging.stage(
                    group.tensors, group.device, name='%s_s%d_%d' % (name, index + 1, g)))
            put_ops.append(tf.group(*[s.put_op for s in staged_groups],
                                    name='put_s%d' % (index + 1)))
        sizes.append([s.size for s in staged_groups])
        names.append([s.name for s in staged_groups])
        clears.extend(s.clear_op for s in staged_groups)
        outputs = [s.outputs for s in staged_groups]
    return Chain(outputs=outputs, put_ops=put_ops, warmup_ops=list(put_ops),
                 drain_ops=[put_ops[k + 1:] for k in range(len(put_ops))],
                 sizes=sizes, names=names, clear_op=tf.group(*clears, name='clear_%s' % name))


def _grouped_chain(stages, group_size, name):
    """`chain` with each stage run once every group_size runs (see the module docstring)."""
    areas, put_ops = [], []  # areas[i] = the staging.Area of each group of stage i
    last = len(stages) - 1
    for index, stage_fn in enumerate(stages):

        def run_stage(index=index, stage_fn=stage_fn):
            groups = (stage_fn() if index == 0 else
                      stage_fn([area.get() for area in areas[index - 1]]))
            made, puts = [], []
            for g, group in enumerate(groups):
                sets = group.tensors if index == last else [group.tensors]
                # The last area takes a group's sets while the consumer takes its last set.
                area = staging.Area(sets[0], group.device, name='%s_s%d_%d' % (name, index + 1, g),
                                    capacity=group_size + 1 if index == last else
                                    staging.DEFAULT_CAPACITY)
                puts.append(area.put(sets))
                made.append(area)
            areas.append(made)
            return tf.group(*puts)

        with tf.name_scope(scopes.STAGING):
            runs = tf.Variable(0, dtype=tf.int64, trainable=False,
                               collections=[tf.GraphKeys.LOCAL_VARIABLES],
                               name='%s_runs_s%d' % (name, index + 1))
            this_run = runs.assign_add(1) - 1
            # Ops built in a branch run only when it is taken: the stage's reads, its work and
            # its puts, so a group's whole cost falls in one run of G.
            taken = tf.cond(tf.equal(this_run % group_size, 0), run_stage, tf.no_op,
                            name='group_s%d' % (index + 1))
            put_ops.append(tf.group(taken, name='put_s%d' % (index + 1)))
    with tf.name_scope(scopes.STAGING):
        sizes = [[area.size() for area in made] for made in areas]
        clear_op = tf.group(*[area.clear() for made in areas for area in made],
                            name='clear_%s' % name)
        outputs = [area.get() for area in areas[last]]
    return Chain(outputs=outputs, put_ops=put_ops, warmup_ops=list(put_ops), drain_ops=[],
                 sizes=sizes, names=[[area.name for area in made] for made in areas],
                 clear_op=clear_op)


def sizes_by_name(chain):
    """{area name: its size tensor} of every staging area of `chain`, in stage order."""
    return {name: size for names, sizes in zip(chain.names, chain.sizes)
            for name, size in zip(names, sizes)}


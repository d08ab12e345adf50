"""tfhp: explicit, session-based tf.compat.v1 training, built to study how training is made fast.

Glossary (each name means one thing everywhere in the code):
  tower        one model copy on one device; `num_towers`, `tower_grads[t][v] = (grad, var)`.
  worker/task  one process of a cluster; `num_workers`.
  ps           a parameter-server task; `num_ps`.
  replica      a worker taking part in one synchronous step.
  chief        task 0 of the worker job: it initialises, checkpoints and summarises.
  spare        a replica beyond replicas_to_aggregate: the late gradient of a step is dropped.
  local step   the global step at which a replica read the variables its gradient comes from.
  global batch batch_size (per tower) * num_towers * num_workers.
  stage        one part of a step (input, staging, forward, backward, aggregate, apply); the
               names live in `tfhp.ops.scopes` so that traces can be read back by stage.
  compute dtype  the dtype towers compute in (float32, float16, bfloat16); the variables a
               tower reads are master copies in their own (variable) dtype, cast where read.
  loss scale   the factor S a float16 tower multiplies its loss by before differentiating and
               divides its gradients by after (`tfhp.runner.loss_scale`).

Importing tfhp has no side effects: entry points (the CLI, experiments, tests) call
`tf.disable_v2_behavior()`, library modules never do.
"""

__version__ = '0.1.0'

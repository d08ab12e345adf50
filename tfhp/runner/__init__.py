"""The one-process run: a BenchmarkConfig in, a graph built, steps timed, a result out; what
`python -m tfhp` runs, and what each task of a cluster builds its step with.

  resolve.py       what a configuration resolves to: the model's entry, batch, image size,
                   learning rate (checked against the machine), the data set, epochs in steps
  build.py         the graph of a configuration, built and not run (`build`, `Built`)
  benchmark.py     the run: a built graph initialised or restored, its mode run (train, eval,
                   forward only), the result (`run`)
  step.py          build_train_step / build_eval_step -> StepOps / EvalOps
  tower.py         one tower's loss; L2 decay; parameter counts
  loops.py         the loops over a built graph: training (checkpoints and evaluations between
                   chunks of timed steps), in-graph asynchronous, evaluation, inference, input
  evaluation.py    evaluating while training: a graph and session of its own, fed the training
                   weights through a private checkpoint
  async_runner.py  in-graph async: one replica step per tower, one thread each
  optimizers.py    optimizers and learning-rate schedules
  loss_scale.py    float16 loss scaling: fixed, or automatic (skip, halve, double)
  devices.py       runtime checks (GPUs present, NCHW supported, XLA compiles), each a probe
                   run once per process
  results.py       the one result record of every run (one process, client, worker)
  calibration.py   a compute profile from a run of the model alone (`python -m tfhp.calibrate`)

Importing this package imports nothing: each module is imported by name.
"""

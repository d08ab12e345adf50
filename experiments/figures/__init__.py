"""Figures of single studies.

  accuracy     accuracy vs images and vs seconds (experiments.convergence's studies)
  chaos_loss   a recovered job's loss by global step, attempt by attempt (experiments.chaos)
  prediction   the step model's predictions against measured steps (experiments.emulated_cluster)
  phases       each worker's phases in a traced step (experiments.nic_queue)
  traced_step  a traced step's ops by row (experiments.bucket_timeline, experiments.pull_timeline)
  kept         docs/img's figures redrawn from docs/results/data (`python -m experiments.figures`)

The shared drawing (line and bar panels, timelines, captions, file formats) is tfhp.plots; the
diagnose report's figure is tfhp.profiling.stage_figure.
"""

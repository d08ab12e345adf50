"""Emulated compute: a model's communication without its arithmetic.

  profile.py    ComputeProfile: a model's variables, layer by layer, and each layer's forward
                and backward time (pure Python, JSON)
  model.py      the emulated model: the real variables, a wait per layer, gradients in
                backward order
  calibrate.py  `python -m tfhp.emulation.calibrate`: a profile from a traced solo step, or
                scaled to a device's published throughput

A job of emulated workers measures the cluster (links, the ps's aggregation, the protocol)
instead of two cores shared by every worker's convolutions (docs/distributed.md#emulated-compute).
Importing this package imports nothing: each module is imported by name.
"""

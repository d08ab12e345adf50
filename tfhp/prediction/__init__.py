"""Predicting a step from measurements: `step_model.py` (pure Python) is a model of one training
step of a cluster, from a compute profile (`tfhp.emulation.profile`), the links' rates and the
mode; `python -m tfhp.predict` prints its figures for a grid of settings and draws the curve."""

"""Predicting a step from measurements: `step_model.py` (pure Python) is a model of one training
step of a cluster, from a compute profile (`tfhp.emulation.profile`), the links' rates and the
mode; `placement.py`, the bytes each ps task holds as a job places the variables; `grid.py`, the
figures for a grid of settings, which `python -m tfhp.predict` prints and draws."""

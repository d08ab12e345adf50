"""The studies: scripts run as `python -m experiments.NAME`, each an entry point.

Python imports this package before the script, so the process is prepared here, before any
script imports TensorFlow (`tfhp.startup.prepare_process`: quiet start-up lines, no Keras),
for the scripts that do not prepare it themselves.
"""
from tfhp import startup

startup.prepare_process()

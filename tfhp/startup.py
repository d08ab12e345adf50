"""What an entry point settles before TensorFlow is imported: TensorFlow reads it once, then.

  TF_CPP_MIN_LOG_LEVEL=2   quiets TensorFlow's C++ start-up chatter.
  TF_USE_LEGACY_KERAS=1    skips Keras at `import tensorflow`. TensorFlow 2.16 and later import
                           Keras 3's optimizers there, to register them: 1.8 of the 4.3 s an
                           import took on the 2-core development box (TF 2.21). tfhp builds no
                           Keras; asked for the legacy Keras, which tfhp does not install,
                           TensorFlow skips that import. So every process of a job or a study
                           starts that much sooner.

A value the user set wins. Library modules never call this (importing tfhp has no side
effects); the processes an entry point starts (`python -m tfhp`) call it themselves.
"""
import os

SETTINGS = (('TF_CPP_MIN_LOG_LEVEL', '2'), ('TF_USE_LEGACY_KERAS', '1'))


def prepare_process():
    """Sets SETTINGS in this process's environment where the user did not; call it before
    anything imports TensorFlow."""
    for name, value in SETTINGS:
        os.environ.setdefault(name, value)

"""tfhp: a graph-mode research toolkit for high-performance and distributed TensorFlow training.

This file imports nothing from TensorFlow so that `pip install` works before TF is present.
"""
import setuptools

setuptools.setup(
    name='tfhp',
    version='0.1.0',
    description='Graph-mode (tf.compat.v1) toolkit for studying fast and distributed training.',
    packages=setuptools.find_packages(include=['tfhp', 'tfhp.*']),
    python_requires='>=3.9',
    install_requires=['numpy', 'absl-py'],
    extras_require={
        # TensorFlow is an extra so that CPU machines take the much smaller CPU-only wheel.
        'cpu': ['tensorflow-cpu>=2.13'],
        'gpu': ['tensorflow[and-cuda]>=2.13'],
        # TensorBoard reads --save_summaries_steps' events and a traced step's RunMetadata; the
        # test extra has it so that tests/profiling/tensorboard_test.py reads them back with it.
        'tensorboard': ['tensorboard>=2.13'],
        # pytest-xdist: the suite runs in two processes (`-n 2`), since its tests wait on the
        # processes they start for a third of their time (README). matplotlib and scikit-learn
        # (the plots and digits extras) so that a clone's test run draws the figures and reads
        # the digits: without them 12 tests that need no GPU skipped; now only what needs a
        # GPU, or a second one, skips.
        'test': ['pytest>=7', 'pytest-xdist>=3', 'tensorboard>=2.13', 'matplotlib',
                 'scikit-learn'],
        # scikit-learn ships the 8x8 digits on disk: a small real data set (tfhp.data.digits).
        'digits': ['scikit-learn'],
        # --plot of the experiments and of `python -m tfhp.diagnose` (tfhp.plots); optional.
        'plots': ['matplotlib'],
    },
    entry_points={'console_scripts': [
        'tfhp=tfhp.cli:run_main',
        'tfhp-launch=tfhp.launch:run_main',
        'tfhp-sweep=tfhp.sweep:run_main',
        'tfhp-search=tfhp.search:run_main',
    ]},
)

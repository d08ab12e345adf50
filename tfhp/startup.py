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

It also refuses a shadowed package: a directory named `tfhp` without tfhp's modules (a clone's
root, say) in the working directory is imported as `tfhp` ahead of an editable install (whose
finder Python asks after the working directory), while `tfhp.cli` and the rest still come from
the install; a job's tasks then trained and died on `tfhp.__version__`. `prepare_process` ends
such a process at once, naming the directory.

`MARKS` holds when this process reached each phase of its start (epoch seconds: 'started' when
the entry point prepared the process, 'imported' once TensorFlow and tfhp were imported, a
cluster worker's 'peers' and 'graph'), for a task's start-up breakdown.
"""
import os
import sys
import time

SETTINGS = (('TF_CPP_MIN_LOG_LEVEL', '2'), ('TF_USE_LEGACY_KERAS', '1'))


MARKS = {}
# A task's start, phase by phase: (name, the mark it ends at); each phase begins where the one
# before it ended. session_ready_time and first_step_time are a worker's result fields.
PHASES = (('import', 'imported'), ('peers', 'peers'), ('graph', 'graph'),
          ('session', 'session_ready_time'), ('first_step', 'first_step_time'))


def mark(phase):
    """Notes that this process reached `phase` now (`MARKS`)."""
    MARKS[phase] = time.time()


def breakdown(marks, begin):
    """{phase: seconds} of a start (`PHASES`) from the epoch seconds `marks` and its beginning:
    import (TensorFlow and tfhp), peers (the task's server up and its essential peers
    answering), graph, session (initialised or restored), first step (the handshake, the
    staging warm-up and the step). A phase whose end was not marked is left out, and the next
    one counts from the last marked end."""
    phases = {}
    for phase, end in PHASES:
        if end in marks:
            phases[phase] = marks[end] - begin
            begin = marks[end]
    return phases


def shadowing_directories(package):
    """The directories standing in for tfhp when `package` (what `import tfhp` gave) is not the
    package this module belongs to: a namespace package's directories. Empty when it is."""
    own = os.path.dirname(os.path.abspath(__file__))
    found = getattr(package, '__file__', None)
    if found and os.path.dirname(os.path.abspath(found)) == own:
        return []
    return [os.path.abspath(path) for path in getattr(package, '__path__', ())
            if os.path.abspath(path) != own]


def refuse_shadowing(package):
    """Ends the process with exit status 2 and a line naming the directory and the remedy when
    `package` is shadowed (`shadowing_directories`)."""
    directories = shadowing_directories(package)
    if directories:
        print('tfhp: error: %s shadows the tfhp package: a directory named tfhp without tfhp\'s '
              'modules (a clone\'s root?), found first on Python\'s path, which starts with the '
              'working directory. Run from another directory (cd elsewhere), or install tfhp so '
              'that it comes first: pip install <clone> (not -e), or PYTHONPATH=<clone>.'
              % ', '.join(directories), file=sys.stderr)
        sys.exit(2)


def prepare_process():
    """Sets SETTINGS in this process's environment where the user did not; call it before
    anything imports TensorFlow. Refuses a shadowed tfhp (`refuse_shadowing`). Marks
    'started'."""
    refuse_shadowing(sys.modules['tfhp'])
    mark('started')
    for name, value in SETTINGS:
        os.environ.setdefault(name, value)

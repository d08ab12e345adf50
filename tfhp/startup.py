"""What an entry point settles before TensorFlow is imported: TensorFlow reads it once, then.

  TF_CPP_MIN_LOG_LEVEL=2   quiets TensorFlow's C++ start-up chatter.
  TF_USE_LEGACY_KERAS=1    skips Keras at `import tensorflow`. TensorFlow 2.16 and later import
                           Keras 3's optimizers there, to register them: 1.8 of the 4.3 s an
                           import took on the 2-core development box (TF 2.21). tfhp builds no
                           Keras; asked for the legacy Keras, which tfhp does not install,
                           TensorFlow skips that import. So every process of a job or a study
                           starts that much sooner.

A value the user set wins. TF_CPP_MIN_LOG_LEVEL does not reach what TensorFlow's libraries
log while they load: each of two (libtensorflow_framework and the profiler plugin, which links
its own copy) logs "oneDNN custom operations are on" from a static initializer, before absl's
logging is set up, so straight to stderr at any level. `prepare_process` therefore also applies
the level to `import tensorflow`'s own output (`QuietImport`): the start-up lines under it are
dropped, the rest written back.

Library modules never call this (importing tfhp has no side
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
import importlib.util
import os
import re
import sys
import tempfile
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


# A line absl logs before its logging is set up ('I1129 06:17:01.52 123 port.cc:153] ...') and
# the notice absl prints once before the first such line.
_ABSL_LINE = re.compile(r'^([IWEF])\d{4} ')
_ABSL_PREAMBLE = 'WARNING: All log messages before absl::InitializeLog() is called'
_SEVERITY = {'I': 0, 'W': 1, 'E': 2, 'F': 3}


def below_level(text, level):
    """`text` (what a library wrote to stderr as it loaded) without the lines TensorFlow's own
    logging would drop at TF_CPP_MIN_LOG_LEVEL=`level`: absl's lines of a lower severity, and
    absl's preamble unless the level is 0."""
    kept = []
    for line in text.splitlines(keepends=True):
        severity = _ABSL_LINE.match(line)
        if level > 0 and line.startswith(_ABSL_PREAMBLE):
            continue
        if severity and _SEVERITY[severity.group(1)] < level:
            continue
        kept.append(line)
    return ''.join(kept)


class _QuietLoader:
    """Runs a module's loader with file descriptor 2 in a temporary file, then writes back what
    `below_level` keeps (Python's own writes to stderr included)."""

    def __init__(self, loader):
        self._loader = loader

    def create_module(self, spec):
        return self._loader.create_module(spec)

    def exec_module(self, module):
        level = int(os.environ.get('TF_CPP_MIN_LOG_LEVEL', '0') or 0)
        sys.stderr.flush()
        saved = os.dup(2)
        with tempfile.TemporaryFile() as captured:
            os.dup2(captured.fileno(), 2)
            try:
                self._loader.exec_module(module)
            finally:
                sys.stderr.flush()
                os.dup2(saved, 2)
                os.close(saved)
                captured.seek(0)
                text = captured.read().decode('utf-8', 'replace')
                sys.stderr.write(below_level(text, level))
                sys.stderr.flush()
                # The module keeps the loader it would have had.
                module.__loader__ = module.__spec__.loader = self._loader


class QuietImport:
    """A finder for sys.meta_path: the next `import tensorflow` loads through `_QuietLoader`.
    It takes itself off the path at that import."""

    def find_spec(self, name, path=None, target=None):  # pylint: disable=unused-argument
        if name != 'tensorflow':
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            spec.loader = _QuietLoader(spec.loader)
        return spec


def prepare_process():
    """Sets SETTINGS in this process's environment where the user did not; call it before
    anything imports TensorFlow; TensorFlow's import then keeps to TF_CPP_MIN_LOG_LEVEL
    (`QuietImport`). Refuses a shadowed tfhp (`refuse_shadowing`). Marks 'started'."""
    refuse_shadowing(sys.modules['tfhp'])
    mark('started')
    for name, value in SETTINGS:
        os.environ.setdefault(name, value)
    if 'tensorflow' not in sys.modules and not any(
            isinstance(finder, QuietImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, QuietImport())

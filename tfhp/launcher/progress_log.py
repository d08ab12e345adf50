"""The chief's progress log (`--progress_file`): one 'global_step loss' line appended after
every step, by every attempt of a job. A supervisor reads how far a job got; the lines of all
attempts are a recovered job's loss curve. Imports no TensorFlow."""
import contextlib
import os
import shutil
import tempfile

from tfhp.launcher import plan


def read(path, start=0):
    """[(global_step, loss)] of every whole line in the log from byte `start` (a line's start,
    e.g. an earlier `size`) on ([] without a log); a line being written (no newline yet) is
    left out."""
    text, _ = _text(path, start=start)
    return _parse(text, False)


def size(path):
    """The log's size in bytes (0 without one)."""
    try:
        return os.path.getsize(path)
    except (FileNotFoundError, TypeError):
        return 0


def last_step(path):
    """The global step of the log's last whole line, or None (reads the log's tail only: the
    launcher polls it while the job runs)."""
    entries = _parse(*_text(path, tail=_TAIL_BYTES))
    return entries[-1][0] if entries else None


_TAIL_BYTES = 4096  # many lines of 'step loss'


def _text(path, tail=None, start=0):
    """(the log's text from byte `start`, or its last `tail` bytes; whether that starts inside
    a line)."""
    if path is None:
        return '', False
    try:
        with open(path, 'rb') as f:
            if tail:
                start = max(0, f.seek(0, 2) - tail)
            f.seek(start)
            return f.read().decode(), bool(tail) and start > 0
    except FileNotFoundError:
        return '', False


def _parse(text, cut):
    lines = text.split('\n')[:-1]  # the last piece has no newline yet (or is empty)
    if cut:
        lines = lines[1:]
    entries = []
    for line in lines:
        step, _, loss = line.partition(' ')
        entries.append((int(step), float(loss)))
    return entries


def attempts(path, starts=None):
    """The log's lines by attempt: [(attempt number from 1, [(step, loss)])] of the attempts
    that took a step.

    Args:
      path: the log.
      starts: the log's size as each attempt started (`faults.Injector.attempt_starts`): the
        attempts are what lies between them. None: a new attempt wherever the global step goes
        back (a restarted job resumes from its checkpoint, before the step reached; one that
        resumed at the step it reached is not seen).
    """
    if starts is None:
        runs = []
        for step, loss in read(path):
            if not runs or step <= runs[-1][-1][0]:
                runs.append([])
            runs[-1].append((step, loss))
        return list(enumerate(runs, 1))
    bounds = list(starts) + [None]
    numbered = []
    for number, (start, end) in enumerate(zip(bounds, bounds[1:]), 1):
        text, _ = _text(path, start=start)  # ASCII: bytes and characters are one
        run = _parse(text if end is None else text[:end - start], False)
        if run:
            numbered.append((number, run))
    return numbered


@contextlib.contextmanager
def ensured(tfhp_args):
    """Yields (tfhp_args, path): the job's --progress_file, or the args with one added in a
    temporary directory that the block's end removes."""
    given = plan.flag_value(tfhp_args, 'progress_file')
    if given:
        yield list(tfhp_args), given
        return
    scratch = tempfile.mkdtemp(prefix='tfhp_progress_')
    path = os.path.join(scratch, 'progress')
    try:
        yield list(tfhp_args) + ['--progress_file=' + path], path
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

"""Where and when figures were measured: the machine, the date and tfhp's commit, as one line.

A figure copied into a paper draft loses its surroundings; `caption()` gives the line that
`tfhp.plots` draws under it (the experiments pass it with --plot). A figure's numbers kept as
data carry the same as fields (`stamp`), in the header of their file (`write_figure_data`:
docs/results/data's format, experiments/figures/kept.py). Pure Python: the commit is asked of
git, and left out where tfhp is not a git checkout or git is missing.
"""
import json
import os
import platform
import shlex
import subprocess
import sys
import time

_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def cpu_model(cpuinfo='/proc/cpuinfo'):
    """The processor's name ('model name' of /proc/cpuinfo on Linux), or what `platform`
    knows elsewhere."""
    try:
        with open(cpuinfo) as f:
            for line in f:
                key, _, value = line.partition(':')
                if key.strip() == 'model name' and value.strip():
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine():
    """'<cpu model>, <n> cores, <OS> <architecture>'."""
    return '%s, %d cores, %s %s' % (cpu_model(), os.cpu_count() or 1, platform.system(),
                                    platform.machine())


def _git(checkout, *args):
    """git's output in `checkout`, or None where git cannot be run there or fails."""
    try:
        proc = subprocess.run(['git'] + list(args), cwd=checkout, capture_output=True,
                              text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return None if proc.returncode else proc.stdout.strip()


def commit(checkout=_CHECKOUT):
    """`git rev-parse --short HEAD` of `checkout` (tfhp's own by default), ending in '-dirty'
    where a tracked file differs from it (as `git describe --dirty` says: figures measured on
    changes not yet committed); None where it is not a git checkout or git cannot be run."""
    head = _git(checkout, 'rev-parse', '--short', 'HEAD')
    if not head:
        return None
    changed = _git(checkout, 'status', '--porcelain', '--untracked-files=no')
    return head + '-dirty' if changed else head


def caption(date=None, machine_text=None, commit_text=None):
    """The caption line: '<machine>; <date>; commit <hash>' (the commit only where known).

    Args:
      date: when the figures were measured, e.g. '2026-11-22' (default: today).
      machine_text: the machine (default: `machine()`, this one).
      commit_text: the commit (default: `commit()`, tfhp's checkout).
    """
    parts = [machine_text or machine(), date or time.strftime('%Y-%m-%d')]
    commit_text = commit_text if commit_text is not None else commit()
    if commit_text:
        parts.append('commit %s' % commit_text)
    return '; '.join(parts)


def run_command(argv=None):
    """This process's command line as it was typed: 'python -m <module> <arguments>' (a script
    run by its path: 'python <path> ...'); `argv` defaults to sys.argv."""
    argv = sys.argv if argv is None else argv
    spec = getattr(sys.modules.get('__main__'), '__spec__', None)
    program = '-m ' + spec.name if spec else argv[0]
    return ' '.join(['python', program] + [shlex.quote(a) for a in argv[1:]])


def stamp():
    """Where, when and how this run measures: {'machine', 'date', 'commit', 'command'} (a
    figure's data keeps them in its header; its caption names the first three). Taken when a
    study starts: the commit that ran, not the one at its end."""
    return {'machine': machine(), 'date': time.strftime('%Y-%m-%d'), 'commit': commit(),
            'command': run_command()}


def write_figure_data(path, header, points):
    """Writes a figure's data to `path` (replacing it): `header` as the first JSON line, named
    after the file ('figure': NAME of NAME.jsonl), then one line per point.

    Args:
      path: the file, e.g. docs/results/data/NAME.jsonl.
      header: how to draw the points ('kind', 'title', ...) and where they were measured (a
        `stamp()` taken when the run started).
      points: JSON-ready dicts, one per op, checkpoint or step the figure draws.
    """
    name = os.path.basename(path)
    name = name[:-len('.jsonl')] if name.endswith('.jsonl') else name
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with open(path, 'w') as f:
        for line in [dict(figure=name, **header)] + list(points):
            f.write(json.dumps(line) + '\n')


def join(captions):
    """One line for the captions of several runs: those of one machine and date share it, their
    commits listed ('m; 2026-11-26; commits abc, def'), and different ones are kept apart by
    ' / '."""
    commits = {}
    for text in captions:
        head, _, rest = text.partition('; commit ')
        commits.setdefault(head, [])
        if rest and rest not in commits[head]:
            commits[head].append(rest)
    return ' / '.join('%s; commit%s %s' % (head, 's' if len(c) > 1 else '', ', '.join(c))
                      if c else head for head, c in commits.items())

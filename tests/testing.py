"""Shared test helpers: small configurations that run in seconds on 2 CPU cores, processes
started side by side (`Started`), and a bounded wait for a condition (`wait_for`)."""
import dataclasses
import os
import subprocess
import time

from tfhp import config as config_lib
from tfhp.launcher import forked_task

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def small_config(model='trivial', batch_size=4, image_size=16, num_batches=3, **sections):
    """A BenchmarkConfig for a tiny run; `sections` replace fields per section, e.g.
    small_config(run={'train_dir': d}, device={'num_devices': 2})."""
    cfg = config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name=model, batch_size=batch_size, image_size=image_size,
                                     num_classes=10),
        run=config_lib.RunConfig(num_batches=num_batches, num_warmup_batches=1,
                                 display_every=1))
    for name, fields in sections.items():
        cfg = replace(cfg, name, **fields)
    return cfg


def replace(cfg, section, **fields):
    """cfg with fields of one section (e.g. 'run') replaced."""
    return dataclasses.replace(cfg, **{section: dataclasses.replace(getattr(cfg, section),
                                                                    **fields)})


class Started:
    """Commands, each its own process, started at once (`ahead`) for tests that each read one.

    Independent processes that are mostly TensorFlow's import on one core end sooner side by
    side on two cores than one after another. Each command runs in `directory`/<name>/ (its
    '{dir}' in an argument stands for that folder), its output in files there, not pipes (a
    full pipe would stall it until its test reads it).

    Args:
      commands: {name: argv}.
      directory: a pathlib.Path of an empty folder.
      env: the processes' environment (default: this one's).
      fork: start `python -m tfhp` commands as forks of the suite's forkserver
        (`tfhp.launcher.forked_task.start`), which imported TensorFlow once, but started no
        runtime; a fork's stderr goes to its stdout. Commands whose settings are read when
        TensorFlow is imported need fork=False.
      ahead: the names to start now (default: all); any other starts when its result is
        asked for (`selected`).
    """

    def __init__(self, commands, directory, env=None, fork=False, ahead=None):
        self._commands, self._directory, self._env, self._fork = commands, directory, env, fork
        self._dirs, self._procs = {}, {}
        for name in commands if ahead is None else ahead:
            self._start(name)

    def _start(self, name):
        folder = self._dirs[name] = self._directory / name
        folder.mkdir()
        argv = [arg.replace('{dir}', str(folder)) for arg in self._commands[name]]
        with open(folder / 'stdout', 'w') as out, open(folder / 'stderr', 'w') as err:
            if self._fork:
                self._procs[name] = forked_task.start(argv, self._env or os.environ, out,
                                                      cwd=ROOT)
            else:
                self._procs[name] = subprocess.Popen(argv, stdout=out, stderr=err, cwd=ROOT,
                                                     env=self._env)

    def result(self, name, timeout_s):
        """(exit status, stdout, stderr, folder) of `name` once it ended; past timeout_s it is
        killed and subprocess.TimeoutExpired raised."""
        if name not in self._procs:
            self._start(name)
        proc, folder = self._procs[name], self._dirs[name]
        try:
            proc.wait(timeout=timeout_s)
        finally:
            self.end([name])
        return (proc.returncode, (folder / 'stdout').read_text(),
                (folder / 'stderr').read_text(), folder)

    def end(self, names=None):
        """Kills the processes of `names` (default: all) that are still running."""
        for name in names or self._procs:
            if self._procs[name].poll() is None:
                self._procs[name].kill()
                self._procs[name].wait()


def reads(name):
    """Marks a test as reading the output of the started command `name` (`selected`)."""
    def mark(test):
        test.started_command = name
        return test
    return mark


def xdist_worker():
    """Whether this process is a pytest-xdist worker: it runs only some of a module's tests,
    which ones is not known ahead, while the other workers keep the other cores busy."""
    return 'PYTEST_XDIST_WORKER' in os.environ


def selected(request):
    """The command names `reads` marked on the tests of this run in `request`'s module: those
    to start ahead of their tests (`Started`). In a pytest-xdist worker, none: there a command
    started ahead might be read by another worker's test only (and so run twice), and no core
    is idle to run it beside this worker's tests; each starts when its test asks for it."""
    if xdist_worker():
        return []
    return sorted({getattr(item.function, 'started_command', None)
                   for item in request.session.items if item.module is request.module} - {None})


def wait_for(predicate, timeout_s=10.0):
    """Polls predicate() every 10 ms until it holds or timeout_s passes; returns its last value."""
    deadline = time.monotonic() + timeout_s
    while not predicate() and time.monotonic() < deadline:
        time.sleep(0.01)
    return predicate()

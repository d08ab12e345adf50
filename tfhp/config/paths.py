"""The output paths of a run (--train_dir, --result_file, --trace_file, --tfprof_file,
--graph_file, --partitioned_graph_file_prefix), checked before any work.

A path the run cannot write would otherwise fail at its first write: for --train_dir the
final checkpoint, after the whole run. `check_output_paths` refuses such a path at once, with a
ConfigError naming the flag and the path.

Writability is decided by trying, never by `os.access`: for root (tests and CI run as root)
`os.access` says yes to everything, even to /proc. A directory is writable if a temporary file
can be created in it (and is removed at once); an existing file is writable if it opens for
append (nothing is written, so nothing already there is lost).

A directory or file that does not exist yet is accepted when its parent is a writable directory;
a missing parent is refused (it is more often a typo than a tree to create).
"""
import os
import tempfile

from tfhp.config import errors

# The trace also writes its RunMetadata to <trace_file> + this: capture.RUN_METADATA_SUFFIX,
# restated because tfhp.config imports no TensorFlow (a test holds the two equal).
RUN_METADATA_SUFFIX = '.runmeta.pb'


def writes_train_dir(cluster):
    """Whether this process writes checkpoints and summaries to --train_dir.

    One process: yes. In a cluster only the task that owns the session: between graphs the
    chief (worker 0); in-graph the client (the controller if there is one, else worker 0).

    Args:
      cluster: a `tfhp.config.ClusterConfig`.
    """
    if not cluster.enabled:
        return True
    if cluster.mode.one_graph and cluster.controller_host:
        return cluster.job_name == 'controller'
    return cluster.job_name == 'worker' and cluster.task_index == 0


def _refuse(flag, path, reason, *args):
    raise errors.ConfigError('--%s=%s: %s' % (flag, path, reason % args))


def _check_writable_directory(flag, path, directory):
    """Refuses unless a file can be created in `directory` (which must exist)."""
    try:
        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as e:
        _refuse(flag, path, 'cannot write in %s (%s)', directory, e.strerror)


def _check_parent(flag, path):
    """Refuses unless the parent of `path` (which does not exist) is a writable directory."""
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        _refuse(flag, path, 'parent directory %s %s', parent,
                'is not a directory' if os.path.exists(parent) else 'does not exist')
    _check_writable_directory(flag, path, parent)


def _check_directory(flag, path):
    """Refuses `path` unless it is a writable directory, or can be created as one.

    Args:
      flag: the flag's name, for the message (e.g. 'train_dir').
      path: the directory.
    Raises:
      tfhp.config.ConfigError: '--<flag>=<path>: <why>'.
    """
    if not os.path.exists(path):
        _check_parent(flag, path)
    elif not os.path.isdir(path):
        _refuse(flag, path, 'is a file, not a directory')
    else:
        _check_writable_directory(flag, path, path)


def _check_file(flag, path, written_as=None):
    """Refuses `path` unless it is a writable regular file, or can be created as one.

    Args:
      flag: the flag's name, for the message (e.g. 'result_file').
      path: the file.
      written_as: the file actually written, if not `path` itself (e.g. a file beside it);
        checked the same way, in path's name.
    Raises:
      tfhp.config.ConfigError: '--<flag>=<path>: <why>'.
    """
    target = written_as or path
    # Messages name the file written only when it is not the flag's own path.
    beside = '%s ' % target if written_as else ''
    if target.endswith(os.sep) or os.path.isdir(target):
        _refuse(flag, path, '%sis a directory, not a file', beside)
    if not os.path.exists(target):
        _check_parent(flag, path)
    elif not os.path.isfile(target):
        _refuse(flag, path, '%sis not a regular file', beside)
    else:
        try:
            with open(target, 'a'):
                pass
        except OSError as e:
            _refuse(flag, path, 'cannot append to %s (%s)', target, e.strerror)


def check_output_file(flag, path):
    """Refuses `path` (of --flag) unless it is a writable file or can be created as one.

    For output files beside a config's own, e.g. `python -m tfhp.diagnose --plot`.
    Raises:
      tfhp.config.ConfigError: '--<flag>=<path>: <why>'.
    """
    _check_file(flag, path)


def check_output_paths(cfg, writes_train_dir):
    """Refuses the first output path of `cfg` that this process could not write.

    --train_dir must be a writable directory, or absent with a writable parent (it is
    created); with --eval it is only read and not checked here. --result_file, --trace_file
    (and the RunMetadata written beside it), --tfprof_file and --graph_file must be writable
    regular files, or absent with a writable parent; the directory of
    --partitioned_graph_file_prefix must be writable (one file per device goes there).

    Args:
      cfg: a `tfhp.config.BenchmarkConfig`.
      writes_train_dir: whether this process writes --train_dir (`writes_train_dir(cluster)`);
        other tasks of a cluster only read it, or not at all.
    Raises:
      tfhp.config.ConfigError: '--<flag>=<path>: <why>'.
    """
    if cfg.run.train_dir and writes_train_dir and not cfg.run.eval:
        _check_directory('train_dir', cfg.run.train_dir)
    if cfg.run.result_file:
        _check_file('result_file', cfg.run.result_file)
    trace = cfg.profile.trace_file
    if trace:
        _check_file('trace_file', trace)
        _check_file('trace_file', trace, written_as=trace + RUN_METADATA_SUFFIX)
    for flag in ('tfprof_file', 'graph_file'):
        if getattr(cfg.profile, flag):
            _check_file(flag, getattr(cfg.profile, flag))
    prefix = cfg.profile.partitioned_graph_file_prefix
    if prefix:
        _check_parent('partitioned_graph_file_prefix', prefix)

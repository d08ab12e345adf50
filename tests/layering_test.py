"""Import rules: dependencies point down, flags stop at the entry points.

ops -> TensorFlow only; pipelines -> ops; replication -> ops, topology, counts;
models -> models;
library modules never import absl.flags; nothing in tfhp imports experiments.
"""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY_POINTS = {'tfhp/cli.py', 'tfhp/__main__.py', 'tfhp/data/__main__.py', 'tfhp/trace.py',
                'tfhp/diagnose.py'}
# Package -> tfhp modules it may import (prefixes).
ALLOWED = {
    'tfhp/ops/': ('tfhp.ops',),
    'tfhp/pipelines/': ('tfhp.ops', 'tfhp.pipelines'),
    # tfhp.counts: the counters' names and arithmetic, pure Python (shared with the launcher).
    'tfhp/replication/': ('tfhp.ops', 'tfhp.replication', 'tfhp.topology', 'tfhp.counts'),
    'tfhp/models/': ('tfhp.models',),
    # Data-set writers share the record format with the pipelines (its one definition).
    'tfhp/data/': ('tfhp.data', 'tfhp.pipelines', 'tfhp.ops', 'tfhp.compat'),
    'tfhp/profiling/': ('tfhp.profiling', 'tfhp.ops', 'tfhp.session'),
}


def _modules():
    for directory, _, files in os.walk(os.path.join(ROOT, 'tfhp')):
        for name in files:
            if name.endswith('.py'):
                path = os.path.join(directory, name)
                yield os.path.relpath(path, ROOT), path


def _imports(path):
    with open(path) as f:
        tree = ast.parse(f.read())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            for alias in node.names:
                yield '%s.%s' % (node.module, alias.name)


@pytest.mark.parametrize('relpath, path', sorted(_modules()))
def test_module_imports_follow_the_layers(relpath, path):
    imports = list(_imports(path))
    assert not any(i.startswith('experiments') for i in imports)
    if relpath not in ENTRY_POINTS and not relpath.startswith('tfhp/tools/'):
        assert not any(i.startswith('absl.flags') or i == 'absl.flags' for i in imports), (
            '%s reads flags; only entry points may' % relpath)
    for package, allowed in ALLOWED.items():
        if relpath.startswith(package):
            bad = [i for i in imports if i.startswith('tfhp') and not i.startswith(allowed)]
            assert not bad, '%s imports %s' % (relpath, bad)

"""Import rules: dependencies point down, flags stop at the entry points.

Every unit of tfhp (a top-level module, or a subpackage) sits on a floor of LAYERS and imports
only units on lower floors (or itself): no upward import anywhere, config/, cluster/, the
launcher and the top level included. The cluster runtime (a task's life) and the launcher (the
processes around it) never import each other. Within the low floors, ALLOWED narrows further:
ops -> TensorFlow only; pipelines -> ops; ... Library modules never import absl.flags; nothing
in tfhp imports experiments; no import cycle among tfhp modules.
"""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENTRY_POINTS = {'tfhp/cli.py', 'tfhp/cli_flags.py', 'tfhp/__main__.py', 'tfhp/data/__main__.py',
                'tfhp/trace.py', 'tfhp/diagnose.py', 'tfhp/kernels.py', 'tfhp/calibrate.py',
                'tfhp/predict.py', 'tfhp/reconnect.py', 'tfhp/ensemble/__main__.py'}
# Floors, bottom first. A new module or subpackage takes its place here (the test says so).
LAYERS = [
    # Pure helpers: the mode table, counters, process start-up, timings.
    ('tfhp', 'tfhp.modes', 'tfhp.counts', 'tfhp.compat', 'tfhp.startup', 'tfhp.timing',
     'tfhp.plots', 'tfhp.flag_help', 'tfhp.provenance'),
    # Primitives: graph pieces and values that know no strategy.
    ('tfhp.topology', 'tfhp.ops', 'tfhp.compression', 'tfhp.models', 'tfhp.session'),
    # emulation: an emulated model slices its layers as the models do (`tfhp.models.slices`).
    ('tfhp.pipelines', 'tfhp.replication', 'tfhp.profiling', 'tfhp.emulation'),
    # prediction: the step model loads each ps as the replication's placement does.
    ('tfhp.data', 'tfhp.prediction'),
    ('tfhp.config',),
    ('tfhp.launcher',),
    # The one-process run (its own floors: RUNNER).
    ('tfhp.runner',),
    ('tfhp.cluster',),
    # The tfhp command's flag definitions, read by the entry points above them.
    ('tfhp.cli_flags',),
    # Entry points.
    ('tfhp.cli', 'tfhp.launch', 'tfhp.sweep', 'tfhp.kernels', 'tfhp.trace', 'tfhp.calibrate',
     'tfhp.predict'),
    # tfhp.ensemble: checkpoints evaluated as one, over the runner's validation input; its
    # command reads tfhp's flags.
    # tfhp.forkserver imports what every task imports, tfhp.cli included.
    ('tfhp.diagnose', 'tfhp.__main__', 'tfhp.ensemble', 'tfhp.reconnect', 'tfhp.search',
     'tfhp.forkserver'),
]
# The runner's modules on floors of their own, bottom first, as LAYERS' units are.
RUNNER = [
    ('tfhp.runner', 'tfhp.runner.loss_scale', 'tfhp.runner.results'),
    ('tfhp.runner.tower',),
    ('tfhp.runner.step',),
    ('tfhp.runner.async_runner',),
    ('tfhp.runner.devices', 'tfhp.runner.optimizers', 'tfhp.runner.loops'),
    ('tfhp.runner.resolve',),
    ('tfhp.runner.evaluation', 'tfhp.runner.build'),
    ('tfhp.runner.benchmark',),
    # calibration: a compute profile from a run of the model alone.
    ('tfhp.runner.calibration',),
]
FLOOR = {unit: floor for floor, units in enumerate(LAYERS) for unit in units}
# Units that must not import each other although their floors would allow one way.
APART = [('tfhp.cluster', 'tfhp.launcher')]
# Package -> tfhp modules it may import (prefixes).
ALLOWED = {
    'tfhp/ops/': ('tfhp.ops',),
    'tfhp/pipelines/': ('tfhp.ops', 'tfhp.pipelines'),
    # counts: the pure arithmetic of the counters managers keep (the launcher shares it).
    'tfhp/replication/': ('tfhp.ops', 'tfhp.replication', 'tfhp.topology', 'tfhp.counts',
                          'tfhp.modes', 'tfhp.compression'),
    # Compression schemes are primitives: TensorFlow and each other only.
    'tfhp/compression/': ('tfhp.compression',),
    'tfhp/models/': ('tfhp.models',),
    # Data-set writers share the record format with the pipelines (its one definition).
    'tfhp/data/': ('tfhp.data', 'tfhp.pipelines', 'tfhp.ops', 'tfhp.compat',
                   'tfhp.startup'),
    # timing: a figure over repeats (Range), for the cluster verdict; plots: the diagnose
    # report's figure (stage_figure).
    'tfhp/profiling/': ('tfhp.profiling', 'tfhp.ops', 'tfhp.session', 'tfhp.modes',
                        'tfhp.timing', 'tfhp.plots'),
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


def _module_name(path):
    name = os.path.relpath(path, ROOT)[:-len('.py')].replace(os.sep, '.')
    return name[:-len('.__init__')] if name.endswith('.__init__') else name


def _import_graph():
    """{tfhp module: the tfhp modules it imports}, imports inside functions included (a
    deferred import is a cycle all the same, only hidden)."""
    paths = {_module_name(path): path for _, path in _modules()}
    graph = {}
    for module, path in paths.items():
        targets = set()
        for name in _imports(path):
            # `from a.b import c` names module a.b.c, or a name c of module a.b.
            while name and name not in paths:
                name = name.rpartition('.')[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def _cycles(graph):
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while not component or component[-1] != node:
                component.append(stack.pop())
                on_stack.discard(component[-1])
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _unit(module):
    """A module's unit: its subpackage (tfhp.cluster.worker -> tfhp.cluster), or itself."""
    parts = module.split('.')
    package = os.path.join(ROOT, *parts[:2])
    return '.'.join(parts[:2]) if len(parts) > 2 or os.path.isdir(package) else module


def test_every_unit_has_a_floor_and_imports_only_below_it():
    graph = _import_graph()
    units = {_unit(m) for m in graph}
    assert not units - set(FLOOR), 'give these a floor in LAYERS: %s' % sorted(units - set(FLOOR))
    upward = sorted('%s -> %s' % (module, target) for module, targets in graph.items()
                    for target in targets if _unit(target) != _unit(module) and
                    FLOOR[_unit(target)] >= FLOOR[_unit(module)])
    assert not upward, 'imports at or above their own floor: %s' % upward
    for a, b in APART:
        crossing = sorted('%s -> %s' % (m, t) for m, targets in graph.items() for t in targets
                          if {_unit(m), _unit(t)} == {a, b})
        assert not crossing, '%s and %s must stay apart: %s' % (a, b, crossing)


def test_the_runners_modules_import_only_below_them():
    graph = _import_graph()
    floor = {module: f for f, modules in enumerate(RUNNER) for module in modules}
    runner = {m for m in graph if _unit(m) == 'tfhp.runner'}
    assert not runner - set(floor), 'give these a floor in RUNNER: %s' % sorted(
        runner - set(floor))
    upward = sorted('%s -> %s' % (module, target) for module in runner
                    for target in graph[module] if target in runner and
                    floor[target] >= floor[module])
    assert not upward, 'imports at or above their own floor: %s' % upward


def test_no_import_cycle_among_tfhp_modules():
    graph = _import_graph()
    assert len(graph) > 80 and 'tfhp.runner.build' in graph['tfhp.cluster.worker']
    assert not _cycles(graph), 'import cycles: %s' % _cycles(graph)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({'a': {'b'}, 'b': {'c'}, 'c': {'a'}, 'd': {'a'}}) == [['a', 'b', 'c']]
    assert _cycles({'a': {'b'}, 'b': set()}) == []

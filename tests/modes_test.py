"""The table of modes and strategies (tfhp/modes.py) is the only place their names are compared,
and every registry keyed by them agrees with it. Pure Python apart from the registries' test."""
import ast
import glob
import os

import pytest

from tfhp import modes
from tfhp.ops import allreduce_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = set(modes.GRAPH_MODES) | set(modes.STRATEGIES)
TABLE = os.path.join('tfhp', 'modes.py')


def _sources():
    for folder in ('tfhp', 'experiments', 'examples'):
        for path in glob.glob(os.path.join(ROOT, folder, '**', '*.py'), recursive=True):
            relpath = os.path.relpath(path, ROOT)
            if relpath != TABLE:
                yield relpath


def _named(node):
    """The mode or strategy names a comparison operand spells out as string literals."""
    if isinstance(node, ast.Constant) and node.value in NAMES:
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in NAMES]
    return []


def name_comparisons(source):
    """(line, names) of each comparison in `source` against a mode or strategy name."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            names = [n for operand in [node.left] + node.comparators for n in _named(operand)]
            if names:
                found.append((node.lineno, names))
    return found


def test_the_scan_finds_each_form_of_comparison():
    source = ("a = x == 'parameter_server'\n"
              "b = 'in_graph' != y\n"
              "c = z in ('replicated', 'other')\n"
              "d = w not in ['local']\n"
              "e = {'independent': 1}[k]\n"      # a registry key, not a comparison
              "f = x == 'replicated_x'\n")
    assert name_comparisons(source) == [(1, ['parameter_server']), (2, ['in_graph']),
                                        (3, ['replicated']), (4, ['local'])]


@pytest.mark.parametrize('relpath', sorted(_sources()))
def test_no_mode_or_strategy_name_is_compared_outside_the_table(relpath):
    with open(os.path.join(ROOT, relpath)) as f:
        found = name_comparisons(f.read())
    assert not found, '%s compares mode or strategy names %s: ask tfhp.modes instead' % (
        relpath, found)


def test_every_strategy_runs_somewhere_and_lookups_name_the_choices():
    for strategy in modes.STRATEGIES.values():
        assert any(strategy.runs_in(mode) for mode in modes.GRAPH_MODES.values()), strategy.name
    with pytest.raises(ValueError, match='parameter_server, replicated'):
        modes.strategy('replicatd')
    assert modes.CLUSTER_GRAPH_MODES == (modes.IN_GRAPH, modes.BETWEEN_GRAPH)


@pytest.mark.parametrize('name, local, in_graph, between_graph', [
    ('parameter_server', True, True, True),
    ('replicated', True, True, False),
    ('independent', True, True, False),
    ('distributed_replicated', False, False, True),
    ('collective_all_reduce', False, False, True),
])
def test_where_each_strategy_runs(name, local, in_graph, between_graph):
    strategy = modes.strategy(name)
    assert [strategy.runs_in(modes.graph_mode(m)) for m in
            (modes.LOCAL, modes.IN_GRAPH, modes.BETWEEN_GRAPH)] == [local, in_graph,
                                                                    between_graph]


def test_the_manager_builders_are_the_table_s_strategies():
    from tfhp import replication  # imports TensorFlow
    assert set(replication.ONE_GRAPH) == set(modes.names(lambda s: s.one_graph))
    assert set(replication.GRAPH_PER_WORKER) == set(modes.names(lambda s: s.graph_per_worker))


def test_the_all_reduce_builders_are_the_spec_s_algorithms():
    from tfhp.ops import allreduce_builder  # imports TensorFlow
    assert set(allreduce_builder.BUILDERS) == set(allreduce_spec.ALGORITHMS)
    assert allreduce_spec.gpu_only('pscpu:32k:nccl') == ['nccl']
    assert 'nccl' not in allreduce_spec.cpu_algorithms()

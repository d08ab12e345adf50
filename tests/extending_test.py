"""docs/extending.md kept true: every recipe's example runs and gives its figures, every code
block of a recipe is part of its example, and no recipe touches more than three files."""
import importlib.util
import os
import re

import numpy as np
import pytest

from tfhp import config as config_lib
from tfhp import modes

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, 'docs', 'extending.md')


def _recipes():
    """{title: (example path, touched paths, [python code blocks])} of each '## A new' section."""
    with open(DOC) as f:
        sections = re.split(r'^## ', f.read(), flags=re.M)[1:]
    recipes = {}
    for section in sections:
        title = section.splitlines()[0]
        example = re.search(r'\*\*Example:\*\* `([^`]+)`', section).group(1)
        touches = re.search(r'\*\*Touches:\*\*(.*?)\n\n', section, re.S).group(1)
        recipes[title] = (example, re.findall(r'`([\w/]+\.py)`', touches),
                          re.findall(r'```python\n(.*?)```', section, re.S))
    return recipes


RECIPES = _recipes()


def _load(relpath):
    """Imports an example by path, once (its registrations are global)."""
    name = 'extending_' + os.path.basename(relpath)[:-len('.py')]
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, relpath))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_page_has_the_five_recipes():
    assert sorted(RECIPES) == ['A new all-reduce algorithm', 'A new gradient compression scheme',
                               'A new model', 'A new ps transfer', 'A new study',
                               'A new variable-update strategy']


@pytest.mark.parametrize('title', sorted(RECIPES))
def test_a_recipe_touches_at_most_three_files_and_quotes_its_example(title):
    example, touches, blocks = RECIPES[title]
    assert 1 <= len(touches) <= 3, touches
    for path in touches:  # each is new (its directory exists) or an existing file
        assert os.path.isdir(os.path.join(ROOT, os.path.dirname(path))), path
    with open(os.path.join(ROOT, example)) as f:
        source = f.read()
    assert blocks
    for block in blocks:
        assert block in source, '%s: a code block is not part of %s' % (title, example)


def _registries():
    """Every table an example registers in (imported here: they load TensorFlow)."""
    from tfhp import compression
    from tfhp import replication
    from tfhp.models import registry
    from tfhp.ops import allreduce_builder
    from tfhp.ops import allreduce_spec
    from tfhp.replication import transfers
    # pylint: disable=protected-access
    return [modes.STRATEGIES, replication.ONE_GRAPH, allreduce_spec.ALGORITHMS,
            allreduce_builder.BUILDERS, compression._SCHEMES, registry._SPECS,
            modes.TRANSFERS, transfers.BUILDERS]


@pytest.fixture(scope='module')
def examples():
    """The examples, loaded; the registries as they were once this module's tests end."""
    saved = [(table, dict(table)) for table in _registries()]
    yield {title: _load(example) for title, (example, _, _) in RECIPES.items()
           if example.startswith('examples/')}
    for table, before in saved:
        table.clear()
        table.update(before)


def test_the_tree_all_reduce_sums_and_is_a_spec_name(examples):
    sums, expected = examples['A new all-reduce algorithm'].main(num_devices=5)
    for got in sums:
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(got, sums[0])  # the same bits everywhere
    config_lib.ReplicationConfig(variable_update='replicated', all_reduce_spec='pscpu:16:tree')


def test_averaged_copies_matches_replicated_under_sgd(examples):
    averaged, replicated = examples['A new variable-update strategy'].main()
    for a, r in zip(averaged, replicated):
        np.testing.assert_allclose(a, r, rtol=1e-5, atol=1e-6)
    assert np.abs(averaged[0] - 0.1).max() > 1e-3  # it trained
    strategy = modes.strategy('averaged_copies')
    assert strategy.runs_in(modes.graph_mode(modes.LOCAL))
    assert not strategy.runs_in(modes.graph_mode(modes.BETWEEN_GRAPH))


def test_all_at_once_trains_as_the_whole_step_does(examples):
    (ours, step), (whole, whole_step) = examples['A new ps transfer'].main()
    assert step == whole_step == 3
    for got, expected, start in zip(ours, whole, (1.0, 2.0, 3.0)):
        np.testing.assert_array_equal(got, expected)
        # loss = sum v^2, SGD at 0.1: each step multiplies v by 0.8.
        np.testing.assert_allclose(got, np.full([4], start * 0.8 ** 3), rtol=1e-6)
    replicated = modes.strategy('distributed_replicated')
    row = modes.transfer_of(replicated, 'all_at_once')
    assert modes.check_transfer(row, replicated) is None
    assert 'needs --variable_update in distributed_replicated' in modes.check_transfer(
        row, modes.strategy('parameter_server'))


def test_the_scaled_cast_keeps_small_gradients(examples):
    errors = examples['A new gradient compression scheme'].main()
    assert errors['float16'] == 1.0  # 1e-8 flushes to zero in float16
    assert errors['scaled_float16'] < 1e-3
    cfg = config_lib.ReplicationConfig(variable_update='replicated',
                                       gradient_compression='scaled_float16')
    assert cfg.compression == 'scaled_float16'


def test_the_mlp_runs_as_a_model_of_the_zoo(examples):
    result = examples['A new model'].main()
    # 28x28x3 inputs, 256 hidden units, 1000 classes: weights and biases of both layers.
    assert result['num_params'] == 28 * 28 * 3 * 256 + 256 + 256 * 1000 + 1000
    assert result['images_per_sec'] > 0

"""The small generated data set the pipeline tests read."""
import pytest

from tests.pipelines import shapes


@pytest.fixture(name='data_dir', scope='module')
def _data_dir(tmp_path_factory):
    """A shapes data set (`shapes.make_shapes`) in a fresh directory, one per test module."""
    directory = str(tmp_path_factory.mktemp('shapes'))
    shapes.make_shapes(directory)
    return directory

"""A tiny learnable data set shared by the convergence studies' tests."""
import pytest

from experiments import common


@pytest.fixture(scope='session')
def shapes_dir(tmp_path_factory):
    """400 training and 100 validation 16x16 images of 10 classes (seconds to make)."""
    return common.learnable_data(str(tmp_path_factory.mktemp('data')), image_size=16,
                                 train_examples=400, validation_examples=100)

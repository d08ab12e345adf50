"""TensorBoard reads back what a run writes: scalars, histograms, the graph and a traced step's
RunMetadata, through TensorBoard's own event reader (its EventAccumulator), not ours."""
import pytest

from tests import testing
from tfhp.runner import benchmark
from tfhp.profiling import summaries

# The `tensorboard` (and `test`) extra installs it; skip, saying so, only where it is absent.
event_accumulator = pytest.importorskip(
    'tensorboard.backend.event_processing.event_accumulator',
    reason='TensorBoard is not installed (pip install -e .[tensorboard])')

_VARIABLES = ['squeeze/weights', 'squeeze/biases', 'hidden/weights', 'hidden/biases',
              'logits/weights', 'logits/biases']


def _read_back(train_dir):
    """A loaded EventAccumulator of train_dir that keeps every event (size 0: all)."""
    accumulator = event_accumulator.EventAccumulator(
        train_dir, size_guidance={kind: 0 for kind in event_accumulator.DEFAULT_SIZE_GUIDANCE})
    accumulator.Reload()
    return accumulator


@pytest.fixture(scope='module')
def run_dir(tmp_path_factory):
    """A train_dir of a 4-step run of the trivial model on 8x8 images, summaries every 2 steps
    at verbosity 3, timed step 3 traced."""
    train_dir = tmp_path_factory.mktemp('train')
    cfg = testing.small_config(
        image_size=8, num_batches=4, run={'train_dir': str(train_dir)},
        profile={'save_summaries_steps': 2, 'summary_verbosity': 3,
                 'trace_file': str(train_dir / 'step.json'), 'trace_step': 3})
    benchmark.run(cfg, log=lambda _: None)
    return str(train_dir)


def test_scalars_are_read_back_at_every_summary_step(run_dir):
    accumulator = _read_back(run_dir)
    scalars = set(accumulator.Tags()['scalars'])
    assert {'loss', 'learning_rate', 'images_per_sec', 'gradient_norm'} <= scalars
    assert {'gradient_norm/' + v for v in _VARIABLES} <= scalars
    for tag in scalars:
        # Timed steps 2 and 4 write summaries, at increasing global steps.
        steps = [event.step for event in accumulator.Scalars(tag)]
        assert len(steps) == 2 and steps[0] < steps[1], tag
    assert all(event.value > 0 for event in accumulator.Scalars('loss'))


def test_histograms_are_read_back(run_dir):
    accumulator = _read_back(run_dir)
    assert set(accumulator.Tags()['histograms']) == {'gradient/' + v for v in _VARIABLES}
    events = accumulator.Histograms('gradient/hidden/weights')
    assert len(events) == 2
    # Every element of the gradient: hidden/weights is 1 x 4096 (the trivial model).
    assert events[0].histogram_value.num == 4096


def test_graph_is_read_back(run_dir):
    accumulator = _read_back(run_dir)
    assert accumulator.Tags()['graph']
    names = {node.name for node in accumulator.Graph().node}
    assert 'global_step' in names and len(names) > 100


def test_traced_step_run_metadata_has_per_node_time_and_memory(run_dir):
    accumulator = _read_back(run_dir)
    tag = summaries.run_metadata_tag(3)
    assert accumulator.Tags()['run_metadata'] == [tag]
    metadata = accumulator.RunMetadata(tag)  # TensorBoard's own copy of the proto
    nodes = [node for device in metadata.step_stats.dev_stats for node in device.node_stats]
    assert metadata.step_stats.dev_stats and nodes
    # Per-node compute time, and the memory TensorBoard colours the graph by.
    assert any(node.op_end_rel_micros > 0 for node in nodes)
    assert any(node.memory for node in nodes)

"""The four combinations at a tiny size: they learn, and staleness is 0 sync, > 0 async."""
import pytest

from experiments import four_combos

OPTIONS = four_combos.Options(num_replicas=2, batch_size=16, num_steps=100, eval_every=50,
                              target_accuracy=0.2, eval_batch_size=50, timeout_s=300)
CHANCE = 0.1  # 10 balanced classes; 0.2 is 3 standard deviations above it on 100 images


def _check_training(record):
    assert record['final_accuracy'] > 2 * CHANCE
    assert [point[0] for point in record['curve']][-1] == record['global_steps']
    assert 0 < record['steps_to_target'] <= record['global_steps']
    assert 0 < record['time_to_target_s'] <= record['train_time_s']
    assert record['images_to_target'] == record['steps_to_target'] * record['images_per_update']


def test_in_graph_sync_and_async(shapes_dir, tmp_path):
    sync = four_combos.run_combo('in_graph_sync', OPTIONS, shapes_dir, str(tmp_path))
    _check_training(sync)
    assert sync['global_steps'] == 100 and sync['images_per_update'] == 32
    assert (sync['staleness_count'], sync['staleness_max'], sync['staleness_mean']) == (
        100, 0, 0)
    assert [p[0] for p in sync['curve']] == [50, 100]

    asynchronous = four_combos.run_combo('in_graph_async', OPTIONS, shapes_dir, str(tmp_path))
    _check_training(asynchronous)
    assert asynchronous['global_steps'] == asynchronous['staleness_count'] == 200
    assert asynchronous['staleness_max'] >= 1 and asynchronous['staleness_mean'] > 0


def test_between_graph_async_measures_staleness_across_processes(shapes_dir, tmp_path):
    record = four_combos.run_combo('between_graph_async', OPTIONS, shapes_dir, str(tmp_path))
    _check_training(record)
    # Every update of both workers is counted where it is applied.
    assert record['staleness_count'] == 200 and record['global_steps'] == 200
    assert record['staleness_max'] >= 1 and record['staleness_mean'] > 0


def test_between_graph_sync_has_a_spare_worker_and_unknown_combinations_are_refused():
    # (Run end to end by the script; its job is tested in tests/cluster.)
    num_workers, args = four_combos.tfhp_flags('between_graph_sync', OPTIONS, '/d', '/t')
    assert num_workers == 3 and '--replicas_to_aggregate=2' in args
    assert '--save_model_steps=50' in args and '--cross_replica_sync=false' not in args
    with pytest.raises(ValueError, match='unknown combination'):
        four_combos.tfhp_flags('in_graph_maybe', OPTIONS, '/data', '/train')


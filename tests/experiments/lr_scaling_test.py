"""Linear learning-rate scaling at a tiny size: each row is the one tower's options scaled to
the same images, and the study runs and records them."""
from experiments import convergence
from experiments import lr_scaling

OPTIONS = convergence.Options(num_replicas=1, batch_size=16, num_steps=40, eval_every=20,
                              target_accuracy=0.2, eval_batch_size=50, timeout_s=300,
                              repeats=1)


def test_rows_scale_the_rate_and_keep_the_images():
    combo, one, extra = lr_scaling.row_run('one_tower', OPTIONS, 4, 1.0)
    assert (combo, one.num_replicas, one.num_steps, extra) == ('in_graph_sync', 1, 40, [])
    _, warm, extra = lr_scaling.row_run('linear_warmup', OPTIONS, 4, 0.5)
    assert (warm.num_replicas, warm.num_steps, warm.eval_every) == (4, 10, 5)
    assert warm.learning_rate == 4 * OPTIONS.learning_rate
    assert extra == ['--num_learning_rate_warmup_epochs=0.5']
    assert lr_scaling.row_run('linear', OPTIONS, 4, 0.5)[2] == []
    assert lr_scaling.row_run('unscaled', OPTIONS, 4, 0.5)[1].learning_rate == (
        OPTIONS.learning_rate)


def test_one_tower_and_linear_warmup_train_the_same_images(shapes_dir, tmp_path):
    one, warm = lr_scaling.run(['one_tower', 'linear_warmup'], OPTIONS, shapes_dir,
                               str(tmp_path), towers=2, warmup_epochs=0.1)
    assert (one['towers'], warm['towers']) == (1, 2)
    assert warm['learning_rate'] == 2 * OPTIONS.learning_rate and warm['warmup_epochs'] == 0.1
    (one_run,), (warm_run,) = one['runs'], warm['runs']
    assert (one_run['global_steps'], warm_run['global_steps']) == (40, 20)
    assert one_run['images_per_update'] * 40 == warm_run['images_per_update'] * 20
    assert one['seeds'] == [OPTIONS.tf_random_seed]

"""The stale-gradient remedies at a tiny size: each is configured as its flag and acts."""
from experiments import convergence
from experiments import stale_gradients

OPTIONS = convergence.Options(num_replicas=2, batch_size=16, num_steps=40, eval_every=20,
                              target_accuracy=0.2, eval_batch_size=50, timeout_s=300,
                              repeats=1)


def test_remedies_are_configured_as_their_flags():
    assert stale_gradients.remedy_run('none', 'in_graph', OPTIONS, 2, 30) == (
        'in_graph_async', OPTIONS, [])
    combo, options, extra = stale_gradients.remedy_run('lr_scaled', 'between_graph', OPTIONS,
                                                       2, 30)
    assert (combo, extra) == ('between_graph_async', [])
    assert options.learning_rate == OPTIONS.learning_rate / 2
    assert stale_gradients.remedy_run('drop', 'in_graph', OPTIONS, 3, 30)[2] == [
        '--max_gradient_staleness=3']
    assert stale_gradients.remedy_run('sync', 'in_graph', OPTIONS, 3, 30)[0] == 'in_graph_sync'


def test_drop_and_warmup_act(shapes_dir, tmp_path):
    drop, warmup = stale_gradients.run(['drop', 'warmup'], 'in_graph', OPTIONS, shapes_dir,
                                       str(tmp_path), max_staleness=0, warmup_steps=10)
    assert (drop['remedy'], warmup['remedy']) == ('drop', 'warmup')
    assert drop['label'] == 'drop' and drop['seeds'] == [OPTIONS.tf_random_seed]
    (drop_run,), (warmup_run,) = drop['runs'], warmup['runs']
    # Threshold 0: every gradient that was stale at all is dropped, each stale by >= 1.
    assert drop_run['staleness_count'] == 80
    assert 1 <= drop_run['stale_gradients_dropped'] <= round(drop_run['staleness_mean'] * 80)
    assert drop_run['stale_gradients_dropped'] <= drop_run['staleness_count']
    assert drop['stale_gradients_dropped']['median'] == drop_run['stale_gradients_dropped']
    # Warm-up: 10 updates of replica 0 alone, then 40 per replica; nothing dropped.
    assert warmup_run['staleness_count'] == warmup_run['global_steps'] == 10 + 80
    assert warmup['stale_gradients_dropped']['values'] == [0]
    assert warmup['final_accuracy']['median'] > 0.2  # 10 classes: chance is 0.1

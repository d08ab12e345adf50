"""The softmax ps-count study at a tiny size: both softmaxes run; the ps split is exact."""
from experiments import common
from experiments import softmax_ps

OPTIONS = softmax_ps.Options(vocab_size=2000, dim=16, batch_size=32, num_sampled=16,
                             num_steps=5, num_warmup=1)


def test_full_and_sampled_softmax_on_two_ps_tasks_repeated():
    full, sampled = softmax_ps.mark(common.repeat_in_rounds(
        softmax_ps.rows([2], OPTIONS, timeout_s=300), 2, 4, softmax_ps.FIGURES))
    v, d = OPTIONS.vocab_size, OPTIONS.dim
    num_bytes = 4 * (2 * v * d + d * d + v)  # embedding, softmax weights, hidden, biases
    for record in (full, sampled):
        assert 'error' not in record, record.get('error')
        assert record['seeds'] == [4, 5] and [r['seed'] for r in record['runs']] == [4, 5]
        assert record['tokens_per_sec']['n'] == 2 and record['tokens_per_sec']['min'] > 0
        # Both vocab x dim matrices are split in two: the ps tasks hold every byte, evenly
        # within the small variables.
        assert sum(record['ps_bytes']) == num_bytes and len(record['ps_bytes']) == 2
        assert max(record['ps_bytes']) - min(record['ps_bytes']) <= 4 * (d * d + v)
    assert full['softmax'] == 'full' and sampled['softmax'] == 'sampled'
    # 6 SGD steps on one batch per replica, in every repeat.
    assert full['loss_after']['max'] < full['loss_before']['min']
    assert full['runs'][0]['loss_before'] != full['runs'][1]['loss_before']  # other seeds

"""Model vs data parallelism: the three modes train identically; slices live on their devices."""
import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from experiments import model_parallel
from tfhp.models import sliced_mlp


def test_single_model_and_data_parallel_train_identically():
    runs = {mode: model_parallel.train(mode, 2, 'cpu', width=64, depth=2, batch=8,
                                       input_size=12, num_steps=2)
            for mode in ('single', 'model', 'data')}
    reference = runs['single'][0]
    assert reference[2] < reference[0]  # it trains
    for mode in ('model', 'data'):
        np.testing.assert_allclose(runs[mode][0], reference, rtol=1e-5)
        assert runs[mode][1].num_steps == 2


def test_slices_are_placed_on_their_devices():
    weights = sliced_mlp.initial_weights(6, [4], 2)
    with tf.Graph().as_default():
        sliced_mlp.build(tf.zeros([2, 6]), weights, ('/cpu:0', '/cpu:1'))
        devices = {v.op.name: v.device for v in tf.global_variables()}
    assert devices['layer0/slice1/weights'].endswith('CPU:1')
    assert devices['layer0/slice0/weights'].endswith('CPU:0')


def test_uneven_split_names_the_layer():
    weights = sliced_mlp.initial_weights(6, [5], 3)
    with tf.Graph().as_default(), pytest.raises(ValueError, match='layer 0 has 5 units'):
        sliced_mlp.build(tf.zeros([2, 6]), weights, ('/cpu:0', '/cpu:1'))


def test_repeats_give_summaries_and_loss_agreement_per_seed():
    network = dict(num_devices=2, device_kind='cpu', width=16, depth=1, batch=4, input_size=6,
                   num_steps=2)
    records = model_parallel.run(network, repeats=2, base_seed=3)
    assert [r['mode'] for r in records] == ['single', 'model', 'data']
    for record in records:
        assert record['seeds'] == [3, 4] and record['images_per_sec']['n'] == 2
        assert record['images_per_sec']['min'] <= record['images_per_sec']['max']
        # Repeat r of every mode trains from seed 3 + r; the modes agree within each seed.
        assert record['max_loss_diff_vs_single']['max'] < 1e-4
    assert records[0]['runs'][0]['losses'] != records[0]['runs'][1]['losses']

"""A new model: a two-layer perceptron on the flattened image, built from tf.nn ops and
get_variable through tfhp's layer builder, so it runs NHWC or NCHW and under every manager.

Registered, it is `--model=mlp` for every command of tfhp. The recipe is in docs/extending.md.

  python examples/extending/mlp_model.py
"""
from tfhp.runner import benchmark
from tfhp import config as config_lib
from tfhp.models import registry


def build(builder, images, num_classes):
    """Logits of a 256-unit hidden layer over the flattened `images`."""
    x = builder.dense(builder.flatten(images), 256)
    return builder.dense(x, num_classes, activation=None)


registry.register('mlp', build, image_size=28, batch_size=32, learning_rate=0.05)


def main():
    """Runs a short benchmark of the mlp on synthetic data; returns its result dict."""
    cfg = config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name='mlp'),
        run=config_lib.RunConfig(num_batches=3, num_warmup_batches=1))
    result = benchmark.run(cfg)
    print('mlp: %d parameters, %.1f images/sec' % (result['num_params'],
                                                   result['images_per_sec']))
    return result


if __name__ == '__main__':
    main()

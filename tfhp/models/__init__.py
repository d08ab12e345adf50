"""CNN models built with `tfhp.models.layers.LayerBuilder`; `registry` maps names to them.

  layers.py      the one LayerBuilder (convolutions, dense, batch norm, pooling)
  common.py      the shared heads
  registry.py    names, defaults (batch, image size, learning rate) and builders
  one file per network family: trivial.py, lenet.py, alexnet.py, overfeat.py, vgg.py,
  googlenet.py, inception.py, inception_v4.py, mobilenet.py, resnet.py, resnet_cifar.py,
  densenet.py; null.py (parameter-traffic probes), sliced_mlp.py (model parallelism)
  slices.py      a dense layer's column slices: widths and names
"""

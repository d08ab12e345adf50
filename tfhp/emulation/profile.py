"""ComputeProfile: what an emulated worker builds and how long each of its layers takes.

A profile lists a model's variables in creation order, grouped into layers (a layer is the
variable scope of a weight; its batch norm's variables, under `<layer>/batchnorm/`, belong to
it), and each layer's forward and backward seconds for one tower's batch. Its times come from a
traced step of the real model alone on a machine (`from_op_times`), or are that profile scaled
to another device's published images/sec (`scaled`). Pure Python: the launcher, the predictor
and the config read profiles without TensorFlow.
"""
import dataclasses
import json
from typing import Optional, Tuple

from tfhp.models import slices

_DTYPE_BYTES = {'float32': 4, 'float16': 2, 'bfloat16': 2, 'int64': 8, 'int32': 4}


@dataclasses.dataclass(frozen=True)
class Variable:
    """One variable of the model: name (without the tower's scope), shape, dtype, trainable."""
    name: str
    shape: Tuple[int, ...]
    dtype: str = 'float32'
    trainable: bool = True

    @property
    def num_bytes(self):
        count = 1
        for dim in self.shape:
            count *= dim
        return count * _DTYPE_BYTES[self.dtype]


@dataclasses.dataclass(frozen=True)
class Layer:
    """The variables of one layer and its compute time for one tower's batch."""
    name: str
    variables: Tuple[Variable, ...]
    forward_s: float
    backward_s: float

    @property
    def gradient_bytes(self):
        """Bytes of the layer's trainable variables: what its gradients put on the wire."""
        return sum(v.num_bytes for v in self.variables if v.trainable)


@dataclasses.dataclass(frozen=True)
class ComputeProfile:
    """A model's layers and compute times, for one tower's batch.

    Attributes:
      model: the registry name of the model profiled.
      batch_size: images per tower the times are for.
      layers: in forward (creation) order.
      source: where the times come from, e.g. 'traced on <cpu>' or 'k80: 52.0 images/sec'.
      apply_s: seconds of one update of every variable (the optimizer's apply) where the
        profile was measured: what a ps spends per update, for the predictor.
      data_name: the data set the model was profiled for (--data_name: 'cifar10' for the
        CIFAR-10 nets; None: ImageNet-like).
    """
    model: str
    batch_size: int
    layers: Tuple[Layer, ...]
    source: str = ''
    apply_s: float = 0.0
    data_name: Optional[str] = None

    def tfhp_args(self, path):
        """The tfhp flags of an emulated run of this profile, saved at `path`."""
        return (['--emulated_compute=' + path, '--model=' + self.model] +
                (['--data_name=' + self.data_name] if self.data_name else []))

    @property
    def forward_s(self):
        return sum(layer.forward_s for layer in self.layers)

    @property
    def backward_s(self):
        return sum(layer.backward_s for layer in self.layers)

    @property
    def compute_s(self):
        """Forward plus backward seconds of one tower's batch."""
        return self.forward_s + self.backward_s

    @property
    def images_per_sec(self):
        """One tower's images/sec if compute were all of a step."""
        return self.batch_size / self.compute_s

    @property
    def gradient_bytes(self):
        return sum(layer.gradient_bytes for layer in self.layers)

    @property
    def num_params(self):
        return sum(v.num_bytes // _DTYPE_BYTES[v.dtype] for layer in self.layers
                   for v in layer.variables if v.trainable)

    def scaled(self, compute_s, source):
        """This profile with every layer's times scaled so that they add up to compute_s."""
        factor = compute_s / self.compute_s
        layers = tuple(dataclasses.replace(layer, forward_s=layer.forward_s * factor,
                                           backward_s=layer.backward_s * factor)
                       for layer in self.layers)
        return dataclasses.replace(self, layers=layers, source=source,
                                   apply_s=self.apply_s * factor)

    def sliced(self, slice_bytes):
        """This profile as the model built with `--layer_slice_bytes=slice_bytes` would be: each
        dense layer (a 2-D '<layer>/weights' and its biases) whose weights take more bytes is
        cut into column slices as `tfhp.models.slices` cuts it, each slice a layer of its own
        ('<layer>/slice<k>') with its share of the layer's times."""
        layers = []
        for layer in self.layers:
            weights = layer.variables[0]
            dense = (weights.name == layer.name + '/weights' and len(weights.shape) == 2 and
                     all(v.name == layer.name + '/biases' for v in layer.variables[1:]))
            units = weights.shape[1] if dense else 0
            widths = slices.widths(units, weights.num_bytes // units, slice_bytes) if dense else []
            if len(widths) < 2:
                layers.append(layer)
                continue
            for index, width in enumerate(widths):
                name, share = slices.scope(layer.name, index), width / units
                variables = tuple(dataclasses.replace(
                    v, name=name + '/' + v.name.rpartition('/')[2], shape=v.shape[:-1] + (width,))
                    for v in layer.variables)
                layers.append(Layer(name, variables, layer.forward_s * share,
                                    layer.backward_s * share))
        return dataclasses.replace(self, layers=tuple(layers))

    def to_json(self):
        return json.dumps(dataclasses.asdict(self), indent=1)

    def save(self, path):
        with open(path, 'w') as f:
            f.write(self.to_json())


def from_dict(data):
    """The ComputeProfile of a dict of `ComputeProfile.to_json`."""
    layers = tuple(Layer(layer['name'], tuple(Variable(v['name'], tuple(v['shape']), v['dtype'],
                                                       v['trainable'])
                                              for v in layer['variables']),
                         layer['forward_s'], layer['backward_s'])
                   for layer in data['layers'])
    return ComputeProfile(data['model'], data['batch_size'], layers, data.get('source', ''),
                          data.get('apply_s', 0.0), data.get('data_name'))


def load(path):
    """Reads a profile written by `ComputeProfile.save`; ValueError naming the file if it is
    not one."""
    try:
        with open(path) as f:
            return from_dict(json.load(f))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise ValueError('%s is not a compute profile (python -m tfhp.emulation.calibrate '
                         'writes one): %s' % (path, e)) from None


def layer_of(variable_name):
    """The layer a variable belongs to: its scope, with a batch norm folded into its layer
    ('stage1/block0/conv1/batchnorm/beta' -> 'stage1/block0/conv1')."""
    scope = ('/' + variable_name.rpartition('/')[0]).split('/batchnorm')[0].lstrip('/')
    return scope or variable_name


def group_layers(variables):
    """[(layer name, [Variable])] in creation order."""
    layers = []
    for variable in variables:
        name = layer_of(variable.name)
        if not layers or layers[-1][0] != name:
            layers.append((name, []))
        layers[-1][1].append(variable)
    return layers


def _layer_in(op_name, names):
    """The longest layer name that op_name's path contains as a whole scope, or None."""
    best = None
    for name in names:
        if ('/' + name + '/') in ('/' + op_name + '/') and (best is None or len(name) > len(best)):
            best = name
    return best


def from_op_times(model, batch_size, variables, op_seconds, compute_s, source, apply_s=0.0):
    """A profile from one traced step's op times.

    Each forward op (`.../forward/<layer>/...`) and backward op (`.../backward/...<layer>/...`)
    counts to its layer; the forward and backward ops no layer owns (the loss, residual adds
    between layers) are spread over the layers in proportion. The times are then scaled so that
    the whole adds up to compute_s, the untraced step's forward and backward time (tracing
    slows ops unevenly, and ops overlap on several cores).

    Args:
      model, batch_size, source: as in ComputeProfile.
      variables: the model's Variables in creation order (one tower's, without its scope).
      op_seconds: {op name: seconds} of one traced step's ops.
      compute_s: seconds of forward and backward in one untraced step.
      apply_s: seconds of the update in one untraced step.
    Returns:
      A ComputeProfile.
    """
    grouped = group_layers(variables)
    names = [name for name, _ in grouped]
    forward = dict.fromkeys(names, 0.0)
    backward = dict.fromkeys(names, 0.0)
    loose = {'forward': 0.0, 'backward': 0.0}
    for op, seconds in op_seconds.items():
        stage = ('backward' if '/backward/' in op else
                 'forward' if '/forward/' in op else None)
        if stage is None:
            continue
        layer = _layer_in(op.split('/' + stage + '/', 1)[1], names)
        if layer is None:
            loose[stage] += seconds
        else:
            (backward if stage == 'backward' else forward)[layer] += seconds
    for times, stage in ((forward, 'forward'), (backward, 'backward')):
        total = sum(times.values())
        for name in names:
            times[name] += loose[stage] * (times[name] / total if total else 1.0 / len(names))
    layers = tuple(Layer(name, tuple(vs), forward[name], backward[name]) for name, vs in grouped)
    traced = ComputeProfile(model, batch_size, layers, source)
    return dataclasses.replace(traced.scaled(compute_s, source), apply_s=apply_s)

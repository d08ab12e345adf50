"""Tests of the model zoo: parameter counts, shapes, data formats, batch norm and dropout.

The big nets are only built as graphs (no session), which takes a second or two each; sessions
are run only for small nets or at small image sizes. The NCHW graphs are built in a second
process while this one builds the NHWC graphs (`nchw_builds`; under pytest-xdist, in this one).
"""
import collections
import concurrent.futures
import functools
import multiprocessing

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp import compat
from tfhp.models import inception
from tfhp.models import layers
from tfhp.models import null
from tfhp.models import registry

NUM_CLASSES = 1000

# Published trainable-parameter counts at 1000 classes, with their sources.
PUBLISHED_PARAMS = {
    # No published figure: the benchmarks' variant counted by hand for 3-channel 28x28 inputs.
    # conv5x5 3->32: 5*5*3*32 + 32 = 2,432; conv5x5 32->64: 5*5*32*64 + 64 = 51,264;
    # fc 7*7*64->512: 3,136*512 + 512 = 1,606,144; fc 512->1000: 512*1000 + 1000 = 513,000;
    # total 2,172,840.
    'lenet': 2172840,
    # torchvision alexnet (one-tower, conv widths 64-192-384-256-256, 224x224): 61,100,840.
    'alexnet': 61100840,
    # OverFeat fast (Sermanet et al. 2014), 231x231 input: 145.9M.
    'overfeat': 145.9e6,
    # Simonyan & Zisserman 2014, configurations A/D/E (as in torchvision): 132.86M, 138.36M,
    # 143.67M.
    'vgg11': 132.86e6,
    'vgg16': 138.36e6,
    'vgg19': 143.67e6,
    # Szegedy et al. 2014 (GoogLeNet) without auxiliary heads: "about 7M". The paper's Table 1
    # column sums to 6.8M but its rows are inconsistently rounded; a direct count of its
    # architecture (real 5x5 convolutions, convolution biases, no batch norm) is 6,998,552.
    # torchvision's 6.6M differs because it uses 3x3 in the 5x5 branch and batch norm.
    'googlenet': 7.0e6,
    # Inception v3 main head (Keras / Szegedy et al. 2015: 23.8M); torchvision inception_v3
    # 27,161,264 less its AuxLogits (3,326,696) is 23,834,568, with BN gamma and beta.
    'inception3': 23.8e6,
    # He et al. 2015 (as counted by torchvision, BN gamma/beta included, no conv biases);
    # v1.5 moves a stride and has the same parameters.
    'resnet50': 25557032,
    'resnet101': 44549160,
    'resnet152': 60192808,
    'resnet50_v1.5': 25557032,
    'resnet101_v1.5': 44549160,
    'resnet152_v1.5': 60192808,
    # Pre-activation ResNets (He et al. 2016, "Identity Mappings") as Keras applications'
    # ResNet50V2 / 101V2 / 152V2 count them: 25,568,360 / 44,577,896 / 60,236,904 trainable.
    # Keras adds biases to the stem, the projection shortcuts and each block's last 1x1
    # convolution (19,008 / 36,416 / 51,776 parameters, all of the difference); ours have none,
    # since a batch norm follows each of them (the next block's pre-activation).
    'resnet50_v2': 25568360,
    'resnet101_v2': 44577896,
    'resnet152_v2': 60236904,
    # Inception v4 (Szegedy et al. 2016) without the auxiliary head: 42.7M, as the TF-slim and
    # timm ports report it (timm: 42.68M).
    'inception4': 42.7e6,
    # MobileNet v1 1.0-224 (Howard et al. 2017, Table 8: 4.2 million); Keras applications'
    # MobileNet(alpha=1.0) has exactly 4,231,976 trainable parameters.
    'mobilenet': 4231976,
}
# 'trivial' and the null models are measuring tools, not published nets: no figure to match.
UNPUBLISHED = {'trivial', 'null_scalar', 'null_dense', 'null_sparse'}

CIFAR_CLASSES = 10
# CIFAR-10 nets at 32x32 and 10 classes: (published figure, its source, our exact count).
# The papers round to two or three significant digits ('0.27M'), so a count matches when it
# lies within half a unit of the last digit printed; the exact counts are pinned as well.
CIFAR_PARAMS = {
    # He et al. 2015, section 4.2 / Table 6 (option-A shortcuts, so no shortcut parameters).
    'resnet20': ('0.27M', 269722),
    'resnet32': ('0.46M', 464154),
    'resnet44': ('0.66M', 658586),
    'resnet56': ('0.85M', 853018),
    'resnet110': ('1.7M', 1727962),
    # Pre-activation moves the batch norms (one per block onto the block's input, one after
    # the last block, none on the stem); for these nets the count comes out the same.
    'resnet20_v2': ('0.27M', 269722),
    'resnet32_v2': ('0.46M', 464154),
    'resnet44_v2': ('0.66M', 658586),
    'resnet56_v2': ('0.85M', 853018),
    'resnet110_v2': ('1.7M', 1727962),
    # Huang et al. 2017, Table 2, DenseNet (no bottleneck, no compression), L=40 k=12, L=100
    # k=12, L=100 k=24.
    'densenet40_k12': ('1.0M', 1019722),
    'densenet100_k12': ('7.0M', 6979642),
    'densenet100_k24': ('27.2M', 27249082),
    # TensorFlow's CIFAR-10 tutorial states 1,068,298 learnable parameters for this net on its
    # 24x24 crops (test_cifar_alexnet_matches_the_tutorial_count); at 32x32 the first dense
    # layer reads 8x8x64 features instead of 6x6x64.
    'alexnet': (None, 1756426),
    'trivial': (None, 52235),  # a measuring tool: 3,072 -> 1 -> 4,096 -> 10
}

# Small image sizes, for the tests that run sessions: lenet's fc fixes 28; the others pool
# globally and build at these (inception3's VALID reductions need at least 75). Where a net
# runs in training mode for the NHWC/NCHW comparison, its last feature map must hold more than
# a pixel or two: batch norm over 2 images x 1 pixel turns the layouts' 1e-7 rounding
# differences into large ones (at 64 resnet50_v2 still differs by 1.3e-4; at 128 by 6e-5).
SMALL_SIZES = {'lenet': 28, 'resnet50': 32, 'googlenet': 32, 'inception3': 75,
               'inception4': 75, 'mobilenet': 64, 'resnet50_v2': 128}


def _num_params(variables):
    return sum(int(np.prod(v.shape.as_list())) for v in variables)


Built = collections.namedtuple('Built', [
    'logits_shape',  # static shape of the logits
    'variables',     # {name: shape} of every variable
    'num_params',    # trainable parameter count
    'conv_shapes',   # {op name: output shape} of every convolution
])


@functools.lru_cache(maxsize=None)
def _build_graph_only(name, data_format, data_name=None, image_size=None):
    """Builds registered model `name` (the variant for `data_name`) at its default size, or
    `image_size`, with batch 1 and 1000 classes (10 for CIFAR-10); returns a `Built`."""
    spec = registry.get(name, data_name)
    num_classes = CIFAR_CLASSES if spec.family == registry.CIFAR10 else NUM_CLASSES
    size = image_size or spec.image_size
    shape = [1, size, size, 3] if data_format == layers.NHWC else [1, 3, size, size]
    with tf.Graph().as_default() as graph:
        images = tf.placeholder(tf.float32, shape)
        # Eval mode builds the same variables with fewer ops (no moving-average updates).
        builder = layers.LayerBuilder(data_format=data_format, is_training=False)
        logits = spec.build(builder, images, num_classes)
        return Built(
            logits.shape.as_list(),
            {v.op.name: v.shape.as_list() for v in tf.global_variables()},
            _num_params(tf.trainable_variables()),
            {op.name: op.outputs[0].shape.as_list()
             for op in graph.get_operations() if op.type == 'Conv2D'})


# The tests that compare a model's NCHW graph with its NHWC one: their data set (None: ImageNet).
_LAYOUT_TESTS = {'test_logits_shape_and_nchw_variables': None,
                 'test_cifar_logits_shape_and_nchw_variables': registry.CIFAR10}


@pytest.fixture(name='nchw_builds', scope='module', autouse=True)
def _nchw_builds(request):
    """{(name, data set): future `Built`} of the NCHW graphs this run's layout tests read,
    built in order in a second process (graph mode, as conftest sets this one up), started with
    this module's first test: building is Python on one core, so the other core builds the NCHW
    graphs while this one builds the NHWC graphs of the count tests. Empty in a pytest-xdist
    worker (`testing.xdist_worker`): the layout tests build their NCHW graphs in this process."""
    wanted = [(item.callspec.params['name'], _LAYOUT_TESTS[item.function.__name__])
              for item in request.session.items
              if item.module is request.module and item.function.__name__ in _LAYOUT_TESTS]
    if not wanted or testing.xdist_worker():
        yield {}
        return
    pool = concurrent.futures.ProcessPoolExecutor(
        1, mp_context=multiprocessing.get_context('spawn'), initializer=compat.enable_graph_mode)
    try:
        yield {(name, data_name): pool.submit(_build_graph_only, name, layers.NCHW, data_name)
               for name, data_name in wanted}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def test_every_registered_model_has_a_published_count():
    assert set(registry.names()) - UNPUBLISHED == set(PUBLISHED_PARAMS)


@pytest.mark.parametrize('name', sorted(PUBLISHED_PARAMS))
def test_parameter_count_matches_publication(name):
    count = _build_graph_only(name, layers.NHWC).num_params
    published = PUBLISHED_PARAMS[name]
    assert abs(count - published) <= 0.005 * published, (name, count, published)


def test_inception3_aux_head_matches_torchvision_count():
    # torchvision inception_v3 with AuxLogits: 27,161,264 trainable parameters.
    with tf.Graph().as_default():
        images = tf.placeholder(tf.float32, [1, 299, 299, 3])
        logits, aux = inception.build(layers.LayerBuilder(), images, NUM_CLASSES,
                                      aux_logits=True)
        assert logits.shape.as_list() == [1, NUM_CLASSES]
        assert aux.shape.as_list() == [1, NUM_CLASSES]
        assert _num_params(tf.trainable_variables()) == 27161264


def _nchw(nchw_builds, name, data_name=None):
    """The `Built` NCHW graph of `name`: the second process's, or else built here."""
    if (name, data_name) in nchw_builds:
        return nchw_builds[(name, data_name)].result(timeout=600)
    return _build_graph_only(name, layers.NCHW, data_name)


@pytest.mark.parametrize('name', registry.names())
def test_logits_shape_and_nchw_variables(name, nchw_builds):
    nhwc = _build_graph_only(name, layers.NHWC)
    nchw = _nchw(nchw_builds, name)
    assert nhwc.logits_shape == [1, NUM_CLASSES]
    assert nchw.logits_shape == [1, NUM_CLASSES]
    # Same names and shapes, so that weights can be shared or copied across data formats.
    assert nchw.variables == nhwc.variables


def test_every_cifar_model_has_a_pinned_count():
    assert set(registry.names(registry.CIFAR10)) == set(CIFAR_PARAMS)


def _millions(figure):
    """('0.27M') -> (270000.0, 5000.0): the value and half a unit of its last digit."""
    digits = figure.rstrip('M')
    decimals = len(digits.partition('.')[2])
    return float(digits) * 1e6, 0.5 * 10 ** (6 - decimals)


@pytest.mark.parametrize('name', sorted(CIFAR_PARAMS))
def test_cifar_parameter_count_matches_publication(name):
    published, exact = CIFAR_PARAMS[name]
    count = _build_graph_only(name, layers.NHWC, registry.CIFAR10).num_params
    assert count == exact, (name, count)
    if published is not None:
        value, rounding = _millions(published)
        assert abs(count - value) <= rounding, (name, count, published)


def test_cifar_alexnet_matches_the_tutorial_count():
    # The TF CIFAR-10 tutorial's figure for the same net on 24x24 crops.
    built = _build_graph_only('alexnet', layers.NHWC, registry.CIFAR10, image_size=24)
    assert built.num_params == 1068298


@pytest.mark.parametrize('name', registry.names(registry.CIFAR10))
def test_cifar_logits_shape_and_nchw_variables(name, nchw_builds):
    nhwc = _build_graph_only(name, layers.NHWC, registry.CIFAR10)
    nchw = _nchw(nchw_builds, name, registry.CIFAR10)
    assert nhwc.logits_shape == nchw.logits_shape == [1, CIFAR_CLASSES]
    assert nchw.variables == nhwc.variables


def test_the_data_set_selects_the_model_variant():
    # As in the reference benchmarks: same name, CIFAR-10 data picks the 32x32 net.
    assert registry.get('alexnet').image_size == 224
    assert registry.get('alexnet', 'cifar10').image_size == 32
    assert registry.get('alexnet', 'synthetic').family == registry.IMAGENET
    assert registry.get('resnet20', 'cifar10').batch_size == 128
    with pytest.raises(ValueError, match="'resnet20' is for cifar10 data, not imagenet"):
        registry.get('resnet20')
    with pytest.raises(ValueError, match="'lenet' is for imagenet data, not cifar10"):
        registry.get('lenet', 'cifar10')
    with pytest.raises(ValueError, match='unknown model .*known models: .*densenet40_k12'):
        registry.get('resnet21', 'cifar10')


@pytest.mark.parametrize('name,strided_conv', [
    ('resnet50', 'conv10'), ('resnet50_v1.5', 'conv11'),
    ('resnet152', 'conv10'), ('resnet152_v1.5', 'conv11')])
def test_resnet_version_places_the_stride(name, strided_conv):
    # The first block of stage 3 halves 56x56 to 28x28: v1 in its first 1x1 convolution
    # (conv10), v1.5 in its 3x3 convolution (conv11); its last 1x1 (conv12) sees 28x28.
    convs = _build_graph_only(name, layers.NHWC).conv_shapes
    block = ['conv10', 'conv11', 'conv12']
    for index, conv in enumerate(block):
        expected = 28 if index >= block.index(strided_conv) else 56
        assert convs['stage3/block0/%s/Conv2D' % conv][1] == expected, conv
    assert convs['stage3/block0/shortcut/Conv2D'][1] == 28
    # 224 / 32: the stem and three stages each halve the size.
    assert list(convs.values())[-1][1:3] == [7, 7]


def _shared_logits(name, builders, images, num_classes=10, runs=1, device=None,
                   data_name=None):
    """Builds `name` once per builder in one graph, sharing its variables, and runs it.

    Args:
      name: registered model name.
      builders: LayerBuilders, one per copy of the model.
      images: numpy images, one per builder, each in that builder's data format.
      num_classes: number of classes.
      runs: how many times to evaluate the logits with the same weights.
      device: device for the model, or None.
      data_name: the data set whose variant of `name` to build.
    Returns:
      A list over runs of lists over builders of logits arrays.
    """
    spec = registry.get(name, data_name)
    with tf.Graph().as_default():
        tf.set_random_seed(1)
        outputs = []
        with tf.device(device):
            for builder, batch in zip(builders, images):
                # The builders' per-kind counters give every copy the same variable names.
                with tf.variable_scope('model', reuse=tf.AUTO_REUSE):
                    outputs.append(spec.build(builder, tf.constant(batch), num_classes))
        config = tf.ConfigProto(allow_soft_placement=True)
        with tf.Session(config=config) as sess:
            sess.run(tf.global_variables_initializer())
            return [sess.run(outputs) for _ in range(runs)]


def _random_images(size, batch=2, seed=0):
    return np.random.RandomState(seed).normal(size=[batch, size, size, 3]).astype(np.float32)


@pytest.mark.parametrize('is_training', [True, False])
def test_fused_and_composite_batch_norm_agree(is_training):
    # 128x128 rather than 32x32: at 32 the last stage is 1x1, so with batch 2 each training-mode
    # batch norm there normalises two numbers per channel, which turns the kernels' 1e-7
    # rounding differences into sign flips. At 128 the logits agree to about 5e-5.
    images = _random_images(128)
    builders = [layers.LayerBuilder(is_training=is_training, fuse_batchnorm=fused)
                for fused in (True, False)]
    [[fused, composite]] = _shared_logits('resnet50', builders, [images, images])
    np.testing.assert_allclose(fused, composite, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('name,is_training,data_name', [
    ('lenet', True, None), ('resnet50', True, None), ('resnet50', False, None),
    ('inception3', False, None), ('inception4', False, None), ('mobilenet', True, None),
    ('resnet50_v2', True, None), ('resnet20', True, 'cifar10'), ('resnet20_v2', True, 'cifar10'),
    ('densenet40_k12', True, 'cifar10'), ('alexnet', False, 'cifar10')])
def test_nhwc_and_nchw_logits_agree(name, is_training, data_name):
    # CPU TensorFlow has no NCHW convolution or pooling kernels.
    if not tf.config.list_physical_devices('GPU'):
        pytest.skip('NCHW needs a GPU')
    # TF32 would round the two layouts' convolutions differently; compare in full precision.
    tf32 = tf.config.experimental.tensor_float_32_execution_enabled()
    tf.config.experimental.enable_tensor_float_32_execution(False)
    try:
        images = _random_images(SMALL_SIZES.get(name, 32))
        builders = [layers.LayerBuilder(data_format=data_format, is_training=is_training)
                    for data_format in (layers.NHWC, layers.NCHW)]
        [[nhwc, nchw]] = _shared_logits(name, builders, [images, images.transpose(0, 3, 1, 2)],
                                        device='/gpu:0', data_name=data_name)
    finally:
        tf.config.experimental.enable_tensor_float_32_execution(tf32)
    np.testing.assert_allclose(nhwc, nchw, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize('name,data_name', [
    ('mobilenet', None), ('resnet50_v2', None), ('resnet20', 'cifar10'),
    ('resnet20_v2', 'cifar10'), ('densenet40_k12', 'cifar10'), ('alexnet', 'cifar10')])
def test_new_models_run_on_the_cpu_in_both_modes(name, data_name):
    # NHWC training and eval builders sharing one set of weights: both give finite logits
    # (the new layers: depthwise convolution, LRN, zero-channel shortcuts, pre-activation).
    images = _random_images(32)
    builders = [layers.LayerBuilder(is_training=mode) for mode in (True, False)]
    [[train, evaluation]] = _shared_logits(name, builders, [images, images],
                                           data_name=data_name)
    assert train.shape == evaluation.shape == (2, 10)
    assert np.all(np.isfinite(train)) and np.all(np.isfinite(evaluation))


def test_resnet_v2_strides_the_first_convolution_and_cifar_stages_halve():
    convs = _build_graph_only('resnet50_v2', layers.NHWC).conv_shapes
    # Stage 3's first block: its shortcut and first 1x1 are strided, as in v1.
    assert convs['stage3/block0/shortcut/Conv2D'][1] == 28
    first = [n for n in convs if n.startswith('stage3/block0/conv')][0]
    assert convs[first][1] == 28
    cifar = _build_graph_only('resnet56', layers.NHWC, registry.CIFAR10).conv_shapes
    sizes = sorted({shape[1] for shape in cifar.values()}, reverse=True)
    assert sizes == [32, 16, 8]
    # 9 blocks of 2 convolutions per stage, plus the stem: 55 convolutions, no projection.
    assert len(cifar) == 55


def test_dropout_is_on_only_in_training():
    # GoogLeNet has dropout before its logits and, pooling globally, builds at 32x32.
    images = _random_images(SMALL_SIZES['googlenet'])
    builders = [layers.LayerBuilder(is_training=mode) for mode in (True, False)]
    (train_1, eval_1), (train_2, eval_2) = _shared_logits(
        'googlenet', builders, [images, images], runs=2)
    assert not np.allclose(train_1, train_2)  # a fresh dropout mask each run
    np.testing.assert_array_equal(eval_1, eval_2)
    assert not np.allclose(train_1, eval_1)


def test_batch_norm_switches_statistics_with_is_training():
    spec = registry.get('resnet50')
    with tf.Graph().as_default():
        images = tf.constant(_random_images(SMALL_SIZES['resnet50']))
        logits, num_updates = {}, {}
        for mode in (False, True):
            before = len(tf.get_collection(layers.BN_UPDATE_OPS))
            with tf.variable_scope('model', reuse=tf.AUTO_REUSE):
                logits[mode] = spec.build(layers.LayerBuilder(is_training=mode), images, 10)
            num_updates[mode] = len(tf.get_collection(layers.BN_UPDATE_OPS)) - before
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            train, evaluation = sess.run([logits[True], logits[False]])
    # Only training updates the moving statistics: mean and variance of 53 batch norms.
    assert num_updates == {False: 0, True: 2 * 53}
    # Batch statistics (training) and the initial moving statistics (0 and 1) differ.
    assert not np.allclose(train, evaluation, rtol=1e-3)


def test_null_dense_reads_a_sliced_vector_slice_by_slice():
    # Sliced (a partitioner's slices, the pipelined transfer's chunks), its mean is summed slice
    # by slice: no op joins the 16 MiB slices or splits their gradient.
    with tf.Graph().as_default():
        with tf.variable_scope('', partitioner=tf.fixed_size_partitioner(4)):
            logits = null.dense(None, tf.zeros([2, 8, 8, 3]), 10)
        parts = tf.trainable_variables()
        grads = tf.gradients(tf.reduce_sum(logits), parts)
        types = {op.type for op in tf.get_default_graph().get_operations()}
        assert len(parts) == 4 and not types & {'ConcatV2', 'Split', 'SplitV', 'Slice'}
        values = np.random.RandomState(0).rand(null.DENSE_ELEMENTS).astype(np.float32)
        with tf.Session() as sess:
            for part, chunk in zip(parts, np.split(values, 4)):
                part.load(chunk, sess)
            got, grad = sess.run([logits, grads[0]])
    np.testing.assert_allclose(got, np.full([2, 10], values.mean()), rtol=1e-5)
    np.testing.assert_allclose(grad, np.full(grad.shape, 20.0 / null.DENSE_ELEMENTS), rtol=1e-6)

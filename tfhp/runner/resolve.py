"""What a BenchmarkConfig resolves to before anything is built: the model's registry entry, the
batch, image size and learning rate it runs at (checked against the machine), the data set it
reads and the steps of its epochs."""
import dataclasses
import math

from tfhp import config as config_lib
from tfhp.data import info as data_info
from tfhp.models import registry
from tfhp.runner import devices


# Images of an emulated run: its model reads one element of them.
EMULATED_IMAGE_SIZE = 8


def _spec(cfg, data_name):
    """The registry's ModelSpec of cfg's model for data set `data_name`."""
    try:
        return registry.get(cfg.model.name, data_name)
    except ValueError as e:
        hint = ('' if cfg.data.data_dir or data_name == registry.CIFAR10 else
                ' (--data_name=cifar10 selects the CIFAR-10 models)')
        raise config_lib.ConfigError('--model: %s%s' % (e, hint)) from None


def model_spec(cfg):
    """The registry's ModelSpec of cfg's model, for cfg's data set."""
    return _spec(cfg, data_set(cfg).name)


def resolve(cfg, data_name):
    """Checks cfg against the registry (the variant for data set `data_name`) and the
    machine; returns (spec, batch, image, lr)."""
    spec = _spec(cfg, data_name)
    devices.check(cfg.device, cfg.model, cfg.xla)
    profile = cfg.model.compute_profile
    batch_size = cfg.model.batch_size or (profile.batch_size if profile else spec.batch_size)
    rate = cfg.optimizer.learning_rate or spec.learning_rate
    if cfg.optimizer.resnet_base_lr:
        if not registry.has_resnet_rate(spec):
            raise config_lib.ConfigError(
                '--resnet_base_lr scales the default rate of ImageNet ResNets; --model=%s is '
                'not one' % spec.name)
        rate = registry.resnet_learning_rate(batch_size, cfg.optimizer.resnet_base_lr)
    if cfg.run.eval:
        batch_size = cfg.evaluation.eval_batch_size or batch_size
    # An emulated model reads one element of its images: the smallest synthetic ones do.
    image_size = EMULATED_IMAGE_SIZE if profile else cfg.model.image_size or spec.image_size
    return spec, batch_size, image_size, rate


def global_batch_size(cfg, data_name):
    """Images one step of cfg takes from the training set, over every tower and worker."""
    batch_size = cfg.model.batch_size or _spec(cfg, data_name).batch_size
    return batch_size * cfg.device.num_devices * max(1, cfg.cluster.num_workers)


def steps_for_epochs(cfg, epochs):
    """The number of training steps (at least 1) of cfg that read `epochs` epochs."""
    info = data_set(cfg)
    return max(1, int(math.ceil(epochs * info.num_examples['train'] /
                                global_batch_size(cfg, info.name))))


def resolve_epochs(cfg):
    """cfg with --num_epochs turned into --num_batches (cfg itself without --num_epochs).

    The epochs count every training step, the warm-up's too (they train and advance the
    learning-rate schedule): ceil(epochs * training examples / global batch) steps in all
    (tf_cnn_benchmarks' count, the global batch counting every tower of every worker), of
    which --num_warmup_batches are the warm-up and the rest (at least 1) timed. Call before
    anything reads cfg.run.num_batches (the `tfhp` command does, for cluster tasks too).
    """
    if cfg.run.num_epochs is None:
        return cfg
    steps = steps_for_epochs(cfg, cfg.run.num_epochs)
    timed = max(1, steps - cfg.run.num_warmup_batches)
    return dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, num_batches=timed))


def resolve_classes(cfg):
    """cfg with --num_classes set to its data set's number of classes (a data directory's, or
    the one synthetic data stands in for), so that the result's configuration records what
    the model was built with."""
    return dataclasses.replace(cfg, model=dataclasses.replace(
        cfg.model, num_classes=data_set(cfg).num_classes))


def data_set(cfg):
    """The DataSetInfo of cfg's data: its directory's, or the one synthetic data stands in for.

    Synthetic data keeps the size of the data set it stands in for, so that epochs in
    learning-rate schedules mean the same as on the real data. Standing in for ImageNet it has
    --num_classes classes; for CIFAR-10, CIFAR-10's 10.
    """
    if not cfg.data.data_dir:
        info = data_info.STAND_INS[cfg.data.data_name or data_info.IMAGENET.name]
        if info is data_info.IMAGENET:
            info = dataclasses.replace(info, num_classes=cfg.model.num_classes)
        return info
    try:
        return data_info.load(cfg.data.data_dir, cfg.data.data_name)
    except data_info.DataSetError as e:
        raise config_lib.ConfigError('--data_dir: %s' % e) from None

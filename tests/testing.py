"""Shared test helpers: small configurations that run in seconds on 2 CPU cores."""
import dataclasses

from tfhp import config as config_lib


def small_config(model='trivial', batch_size=4, image_size=16, num_batches=3, **sections):
    """A BenchmarkConfig for a tiny run; `sections` replace fields per section, e.g.
    small_config(run={'train_dir': d}, device={'num_devices': 2})."""
    cfg = config_lib.BenchmarkConfig(
        model=config_lib.ModelConfig(name=model, batch_size=batch_size, image_size=image_size,
                                     num_classes=10),
        run=config_lib.RunConfig(num_batches=num_batches, num_warmup_batches=1,
                                 display_every=1))
    for name, fields in sections.items():
        cfg = replace(cfg, name, **fields)
    return cfg


def replace(cfg, section, **fields):
    """cfg with fields of one section (e.g. 'run') replaced."""
    return dataclasses.replace(cfg, **{section: dataclasses.replace(getattr(cfg, section),
                                                                    **fields)})

"""Writes Examples into `<subset>-NNNNN-of-MMMMM` shards, several shards at a time."""
import concurrent.futures
import os

import tensorflow.compat.v1 as tf

from tfhp.pipelines import example_format


def shard_ranges(num_items, num_shards):
    """(start, end) of each shard's contiguous slice; sizes differ by at most one."""
    bounds = [num_items * s // num_shards for s in range(num_shards + 1)]
    return list(zip(bounds[:-1], bounds[1:]))


def write_subset(output_dir, subset, items, make_example, num_shards, num_threads=2):
    """Writes one subset: shard s holds the Examples of the s-th slice of `items`.

    Args:
      output_dir: directory of the shards (created if missing).
      subset: 'train' or 'validation' (the shards' name prefix).
      items: a sequence; shuffle it first so that each shard mixes the classes.
      make_example: make_example(item) -> tf.train.Example; called from `num_threads` threads.
      num_shards: number of files (>= 1).
      num_threads: shards written at once.
    Returns:
      The shard file names.
    Raises:
      ValueError: num_shards < 1 or more shards than items.
    """
    if not 1 <= num_shards <= max(len(items), 1):
        raise ValueError('%s: %d shard(s) for %d examples; need 1 <= shards <= examples'
                         % (subset, num_shards, len(items)))
    os.makedirs(output_dir, exist_ok=True)
    paths = [os.path.join(output_dir, example_format.SHARD_NAME % (subset, s, num_shards))
             for s in range(num_shards)]

    def write_shard(shard):
        start, end = shard_ranges(len(items), num_shards)[shard]
        with tf.io.TFRecordWriter(paths[shard]) as out:
            for item in items[start:end]:
                out.write(make_example(item).SerializeToString())

    with concurrent.futures.ThreadPoolExecutor(num_threads) as pool:
        for future in [pool.submit(write_shard, s) for s in range(num_shards)]:
            future.result()
    return paths

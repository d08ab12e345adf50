"""scikit-learn's handwritten digits (1,797 8x8 images, 10 classes) as a small real data set.

The images ship inside the scikit-learn wheel, so no download is needed: install the extra
`pip install -e '.[digits]'`. Each 0..16 grey image is scaled to 0..255, upscaled bilinearly to
`image_size`, made RGB and stored as JPEG; a seeded `validation_fraction` is held out.
"""
import numpy as np

from tfhp.data import codec as codec_lib
from tfhp.data import info as info_lib
from tfhp.data import writer
from tfhp.pipelines import example_format


def load():
    """(images uint8 [n, 8, 8] in 0..255, labels int [n]); ImportError without scikit-learn."""
    try:
        from sklearn import datasets  # pylint: disable=g-import-not-at-top
    except ImportError:
        raise ImportError("the digits data set needs scikit-learn: pip install -e "
                          "'.[digits]'") from None
    digits = datasets.load_digits()
    images = np.round(digits.images * 255.0 / 16.0).astype(np.uint8)
    return images, digits.target.astype(np.int64)


def convert(output_dir, image_size=32, validation_fraction=0.2, train_shards=4,
            validation_shards=1, num_threads=2, seed=0):
    """Writes the digits as train and validation shards plus the data set's info.

    Args:
      output_dir: where the shards and dataset_info.json go.
      image_size: height and width of the stored images (>= 8).
      validation_fraction: share of the images held out for validation.
      train_shards, validation_shards: files per subset.
      num_threads: shards written at once.
      seed: seed of the split and order.
    Returns:
      The DataSetInfo written.
    """
    images, labels = load()
    order = np.random.default_rng(seed).permutation(len(labels))
    num_validation = int(round(validation_fraction * len(labels)))
    subsets = {'validation': order[:num_validation], 'train': order[num_validation:]}
    shards = {'train': train_shards, 'validation': validation_shards}
    with codec_lib.JpegCodec() as codec:

        def make_example(index):
            encoded = codec.encode(codec_lib.to_rgb(images[index]), size=(image_size,
                                                                           image_size))
            label = int(labels[index])
            return example_format.make_example(encoded, label, image_size, image_size,
                                               text=str(label).encode(),
                                               filename=b'digits_%d' % index)

        for subset in info_lib.SUBSETS:
            writer.write_subset(output_dir, subset, subsets[subset], make_example,
                                shards[subset], num_threads)
    info = info_lib.DataSetInfo('digits', 10, {s: len(v) for s, v in subsets.items()},
                                image_size, tuple(str(d) for d in range(10)))
    info_lib.write(output_dir, info)
    return info

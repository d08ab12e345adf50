"""Data sets in the ImageNet TFRecord format: writing, converters, generators and checks.

  writer.py     shards of Examples written in parallel, plus the data set's info file
  info.py       DataSetInfo (classes, examples per subset) read from a data directory
  codec.py      JPEG encoding and decoding for the writers and the checker
  synthetic.py  a learnable synthetic image data set of any size and image size
  folder.py     a folder of JPEG/PNG images, one sub-folder per class
  digits.py     scikit-learn's 8x8 digits, upscaled (the optional extra `tfhp[digits]`)
  cifar10.py    CIFAR-10 (either distribution) converted to records
  check.py      finds corrupt records and names their file and index
  errors.py     describe_corrupt_input: the corrupt record behind a failed training step

`python -m tfhp.data --help` (__main__.py) runs them from the command line. The record layout is defined
once, in `tfhp.pipelines.example_format`.
"""

"""Redraws docs/img's figures from the data kept in docs/results/data (PNG and SVG each).

  python -m experiments.figures                       # every figure with data
  python -m experiments.figures --only=links_modes    # one (or a comma-separated few)
  python -m experiments.figures --out_dir=/tmp/figs   # elsewhere

Each caption names the machine, date and commit the numbers were measured on (the data's
header), not this run's. Needs matplotlib (pip install -e '.[plots]').
"""
import sys

from absl import app
from absl import flags

from experiments.figures import kept
from tfhp import plots

flags.DEFINE_list('only', [], 'Figures to redraw (names of docs/results/data/NAME.jsonl); '
                  'default: every one.')
flags.DEFINE_string('out_dir', kept.IMG_DIR, 'Where the figures go.')
FLAGS = flags.FLAGS


def main(argv):
    del argv
    try:
        plots.check_available()
    except plots.PlotsUnavailable as e:
        print(e, file=sys.stderr)
        return 2
    known = kept.names()
    unknown = [name for name in FLAGS.only if name not in known]
    if unknown:
        print('--only: no data for %s (docs/results/data holds %s)'
              % (', '.join(unknown), ', '.join(known)), file=sys.stderr)
        return 2
    for name in FLAGS.only or known:
        for path in kept.draw(name, FLAGS.out_dir):
            print('plot: %s' % path)
    return 0


if __name__ == '__main__':
    app.run(lambda argv: sys.exit(main(argv)))

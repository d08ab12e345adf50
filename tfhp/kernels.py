"""`python -m tfhp.kernels LOG [REFERENCE_LOG]`: the oneDNN kernels a run executed.

LOG is the standard output of a run started with ONEDNN_VERBOSE=1 (tfhp's, or any TensorFlow
program's). With one log: time per primitive kind, implementation and propagation kind. With
two: the problems both runs executed, side by side by median time per execution, and those
only one of them ran (see tfhp.profiling.onednn_log; docs/profiling.md#onednn-kernels).

  ONEDNN_VERBOSE=1 python -m tfhp --model=resnet50 --batch_size=8 --num_batches=10 > tfhp.log
  python -m tfhp.kernels tfhp.log reference.log
"""
import json
import sys

from absl import app
from absl import flags

from tfhp.profiling import onednn_log

flags.DEFINE_list('names', ['tfhp', 'reference'], 'What to call the two logs in the table.')
flags.DEFINE_boolean('json', False, 'Print the figures as one JSON object instead.')

FLAGS = flags.FLAGS


def main(argv):
    """Prints the summary of argv[1] or the comparison of argv[1] and argv[2]; exit status 2
    on a log that cannot be read or holds no execution."""
    if len(argv) not in (2, 3) or len(FLAGS.names) != 2:
        print('usage: python -m tfhp.kernels [--names=A,B] [--json] LOG [REFERENCE_LOG]',
              file=sys.stderr)
        return 2
    try:
        runs = [onednn_log.read(path) for path in argv[1:]]
    except (OSError, ValueError) as e:
        print('tfhp.kernels: error: %s' % e, file=sys.stderr)
        return 2
    if len(runs) == 1:
        groups = onednn_log.summarize(runs[0])
        print(json.dumps({'groups': [g._asdict() for g in groups]}) if FLAGS.json
              else onednn_log.format_summary(groups))
        return 0
    rows = onednn_log.compare(*runs)
    if FLAGS.json:
        print(json.dumps({'names': FLAGS.names, 'rows': [r._asdict() for r in rows],
                          'common_ratio': onednn_log.common_ratio(rows)}))
    else:
        print(onednn_log.format_comparison(rows, *FLAGS.names))
    return 0


if __name__ == '__main__':
    app.run(lambda argv: sys.exit(main(argv)))

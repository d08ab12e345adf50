"""`python -m tfhp.trace PATH`: the analyser's report of one traced step.

PATH is a trace written by `--trace_file` (the Chrome trace or its `.runmeta.pb`), or any
serialized RunMetadata captured with FULL_TRACE. Prints busy and idle time per device, time per
stage, transfers and how much of them compute hid, the critical path and the top ops (see
tfhp.profiling.analysis for the definitions, docs/profiling.md for how to read it).
"""
import json
import sys

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import app  # pylint: disable=g-import-not-at-top
from absl import flags

from tfhp.profiling import analysis
from tfhp.profiling import capture
from tfhp.profiling import report

flags.DEFINE_integer('top_ops', 10, 'How many ops to list by self time.')
flags.DEFINE_boolean('json', False, 'Print the figures as one JSON object instead.')

FLAGS = flags.FLAGS


def main(argv):
    """Prints the report of the trace named by argv[1]; exit status 2 on a bad path."""
    if len(argv) != 2:
        print('usage: python -m tfhp.trace [--top_ops=N] [--json] PATH', file=sys.stderr)
        return 2
    path = argv[1]
    try:
        metadata = capture.load_run_metadata(path)
    except (OSError, ValueError) as e:
        print('tfhp.trace: error: %s' % e, file=sys.stderr)
        return 2
    figures = analysis.analyze(metadata, top=FLAGS.top_ops)
    if FLAGS.json:
        print(json.dumps(figures.to_dict(), sort_keys=True))
    else:
        print(report.format_report(figures, title='trace: %s' % path))
    return 0


if __name__ == '__main__':
    app.run(lambda argv: sys.exit(main(argv)))

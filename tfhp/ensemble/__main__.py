"""`python -m tfhp.ensemble --checkpoints=A,B,C <tfhp flags>`: an ensemble against its members.

Loads the checkpoints into one graph, member i on device i (`tfhp.ensemble`), and evaluates the
ensemble (the mean of the members' softmax probabilities) and each member on the same
validation batches. The tfhp flags are the members' model and data flags, as an --eval run of
one of them would take (--model, --image_size, --data_dir, --eval_batch_size,
--num_eval_batches: default the whole validation set once); every checkpoint must be of that
model. Prints a line per member, one for the ensemble, then the figures as one JSON line.
Exit status 2 and one line naming the file or the flag where a checkpoint or a setting is at
fault.

  python -m tfhp.ensemble --checkpoints=/tmp/a,/tmp/b,/tmp/c --model=lenet --image_size=16 \\
      --data_dir=/tmp/shapes --eval_batch_size=100
"""
import json
import os
import sys

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import app  # pylint: disable=g-import-not-at-top,wrong-import-position
from absl import flags

from tfhp import cli
from tfhp import compat
from tfhp import config as config_lib

flags.DEFINE_list('checkpoints', [], 'The members: checkpoint prefixes (.../model.ckpt-300) or '
                  'directories (their newest checkpoint), comma-separated.')


def main(argv):
    """Evaluates the ensemble the flags describe; returns the exit status."""
    if len(argv) > 1:
        print('tfhp.ensemble: error: unexpected arguments: %s' % ' '.join(argv[1:]),
              file=sys.stderr)
        return 2
    compat.enable_graph_mode()
    # TensorFlow only once the flags are parsed (--help needs none).
    from tfhp import ensemble  # pylint: disable=g-import-not-at-top
    try:
        if not cli.FLAGS.checkpoints:
            raise config_lib.ConfigError('--checkpoints: name at least one checkpoint')
        # What --eval_batch_size and --num_eval_batches apply to; --eval's own check wants a
        # checkpoint directory, but the members are restored by hand.
        cli.FLAGS.eval = True
        cli.FLAGS.train_dir = cli.FLAGS.train_dir or os.devnull
        members = ensemble.build(cli.config_from_flags(cli.FLAGS), cli.FLAGS.checkpoints)
        figures = ensemble.evaluate(members)
    except (config_lib.ConfigError, ensemble.CheckpointError) as e:
        print('tfhp.ensemble: error: %s' % e, file=sys.stderr)
        return 2
    print('\n'.join(ensemble.describe(figures)))
    print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == '__main__':
    app.run(lambda argv: sys.exit(main(argv)))

"""How long a small job takes with its tasks started as new processes (exec) and as forks of a
forkserver (`tfhp.forkserver`), which imports TensorFlow once for all of them.

Each row is a job of 1 ps and --workers workers of the trivial model at 8x8 through the
launcher (`tfhp.launcher.local_job`); the study starts its own forkserver and names it to the
launcher (TFHP_FORKSERVER) for the fork rows only. Figures: the launcher's wall time, the last
worker's first step after its launch, and the longest import of a task (`startup`'s phases).

  python -m experiments.job_start --workers=2,4 --repeats=5
"""
import functools
import os
import tempfile

from absl import flags

from experiments import common
from experiments import frame
from tfhp.launcher import forked_task

FLAGS = flags.FLAGS
FIGURES = ('wall_time_s', 'first_step_s', 'import_s')
TABLE = [('start', 'start', None), ('workers', 'num_workers', '%d'),
         ('job wall s', 'wall_time_s', '%.2f'), ('last first step s', 'first_step_s', '%.2f'),
         ('longest import s', 'import_s', '%.2f')]
SMALL = ['--model=trivial', '--image_size=8', '--batch_size=2', '--num_classes=10']


def measure(start, num_workers, server, seed):
    """One job, its tasks started as `start` says ('exec' or 'fork' through `server`)."""
    os.environ.pop(forked_task.ENVIRONMENT_VARIABLE, None)
    if start == 'fork':
        os.environ[forked_task.ENVIRONMENT_VARIABLE] = server
    try:
        run = common.run_cluster(1, num_workers, SMALL + [
            '--tf_random_seed=%d' % seed, '--num_batches=%d' % FLAGS.steps,
            '--num_warmup_batches=%d' % FLAGS.warmup_steps])
    finally:
        os.environ.pop(forked_task.ENVIRONMENT_VARIABLE, None)
    if run.error:
        raise RuntimeError('%s, %d workers: %s' % (start, num_workers, run.error))
    tasks = run.summary['tasks']
    return {'study': 'job_start', 'start': start, 'num_workers': num_workers, 'seed': seed,
            'wall_time_s': run.summary['wall_time_s'],
            'first_step_s': max(t['start_to_first_step_s'] for t in tasks),
            'import_s': max(t['startup_s']['import'] for t in tasks)}


def study():
    """Every worker count, exec and fork, --repeats times in rounds."""
    directory = tempfile.mkdtemp(prefix='tfhp_job_start_')
    path = os.path.join(directory, 'socket')
    with open(os.path.join(directory, 'server.log'), 'w') as log:
        server = forked_task.spawn(path, log)
    try:
        frame.run([functools.partial(measure, start, int(w), path)
                   for w in FLAGS.workers for start in ('exec', 'fork')], FIGURES, TABLE)
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == '__main__':
    flags.DEFINE_list('workers', ['2', '4'], 'Worker counts (one ps each).')
    frame.main(study, steps=20, warmup_steps=2, repeats=5)

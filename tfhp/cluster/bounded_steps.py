"""A worker's session runs, each bounded and named on failure: its steps (`step_runner`), and
the handshake that waits until the ps tasks can reach it again (`handshake`).

A run past its bound, or one that fails because a peer went away, ends the task through the
watchdog (`tfhp.cluster.watchdog`), naming the peers most likely to blame.
"""
import itertools
import time

import tensorflow.compat.v1 as tf

from tfhp.cluster import errors

# Errors of a run that mean a peer went away (or the run was cancelled because one did).
PEER_ERRORS = (tf.errors.UnavailableError, tf.errors.AbortedError, tf.errors.CancelledError)


def step_runner(sess, cluster, dog, what):
    """run(fetches) -> their values, each run a step whose phase the watchdog bounds.

    A step past --step_timeout_s, or one that fails because a peer went away, ends the task
    through the watchdog, naming the peers most likely to blame. Steps are named
    '<what> <n>' in messages.
    """
    options = tf.RunOptions(timeout_in_ms=int(cluster.step_timeout_s * 1000))
    # The step's own timeout comes first; the watchdog's bound is the backstop.
    bound = cluster.step_timeout_s + cluster.peer_timeout_s
    numbers = itertools.count(1)

    def run(fetches):
        step = '%s %d' % (what, next(numbers))
        dog.phase(step, bound)
        try:
            return sess.run(fetches, options=options)
        except tf.errors.DeadlineExceededError:
            blame = dog.culprits()
            dog.fail('%s did not end within --step_timeout_s=%g%s'
                     % (step, cluster.step_timeout_s, '; ' + blame if blame else ''))
        except PEER_ERRORS as e:
            named = dog.named_in(e.message)
            blame = ('lost %s' % ', '.join(str(p) for p in named)) if named else dog.culprits()
            dog.fail('%s failed (%s)%s' % (step, errors.cause(e.message, type(e).__name__),
                                           '; ' + blame if blame else ''), lost=named)
        raise errors.PeerLost(step)  # reached only where `fail` returns (a test's)
    return run


def handshake(sess, handshake_op, cluster, dog):
    """Runs `handshake_op` until it succeeds: the ps tasks can reach this worker again.

    The ps tasks pull every tensor a worker sends them, and after a worker died their gRPC
    channel to its address backs off for seconds: a restarted worker's first step would fail
    with "Failed to connect". Retried for at most --peer_timeout_s.
    """
    what = 'waiting for the ps tasks to reach this worker'
    dog.phase(what, 2 * cluster.peer_timeout_s)
    options = tf.RunOptions(timeout_in_ms=int(cluster.peer_timeout_s * 1000))
    deadline = time.monotonic() + cluster.peer_timeout_s
    while True:
        try:
            sess.run(handshake_op, options=options)
            return
        except PEER_ERRORS as e:
            if time.monotonic() > deadline:
                dog.fail('%s did not end within --peer_timeout_s=%g (%s)'
                         % (what, cluster.peer_timeout_s, errors.cause(e.message)))
                raise errors.PeerLost(what) from e  # reached only where `fail` returns
            time.sleep(0.2)

"""A hand-written between-graph job on this machine: one ps and N workers, each a process.

This launcher picks free 127.0.0.1 ports, starts one ps and --num_workers workers
(examples/between_graph_task.py, one process each, with --job_name and --task_index), prints
their output prefixed by the task, and waits for every one of them, at most 2 --timeout_s (each
task's own bound on its life) + 30 s. It imports no TensorFlow: only the tasks do.

  python examples/between_graph.py --num_workers=2 --steps=5

See docs/guide.md for a walk through both files; `python -m tfhp.launch` is the full version
(liveness, synchronous steps, checkpoints, faults: docs/distributed.md, docs/faults.md).
"""
import argparse
import os
import socket
import subprocess
import sys
import threading
import time

TASK = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'between_graph_task.py')


def free_ports(count):
    """`count` ports free on 127.0.0.1 now (a later bind may still lose a race: rare)."""
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(('127.0.0.1', 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def launch(args):
    """Starts the ps and the workers, relays their output, waits for all, at most 2 timeout_s + 30 s."""
    ports = free_ports(1 + args.num_workers)
    hosts = ['127.0.0.1:%d' % p for p in ports]
    common = [sys.executable, TASK, '--ps_hosts=' + hosts[0],
              '--worker_hosts=' + ','.join(hosts[1:]), '--steps=%d' % args.steps,
              '--batch_size=%d' % args.batch_size, '--timeout_s=%g' % args.timeout_s]
    tasks = [('ps', 0)] + [('worker', i) for i in range(args.num_workers)]
    procs, relays = [], []
    for job, index in tasks:
        proc = subprocess.Popen(common + ['--job_name=' + job, '--task_index=%d' % index],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        relay = threading.Thread(target=_relay, args=(proc, '[%s %d] ' % (job, index)))
        relay.start()
        procs.append(proc)
        relays.append(relay)
    deadline = time.monotonic() + 2 * args.timeout_s + 30  # each task ends itself first
    statuses = []
    for (job, index), proc in zip(tasks, procs):
        try:
            statuses.append(proc.wait(timeout=max(0.0, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            proc.kill()  # only our own child, by its handle
            statuses.append(proc.wait())
            print('%s %d did not end in time; killed' % (job, index))
    for relay in relays:
        relay.join()
    print('exit statuses: %s' % ', '.join('%s %d: %d' % (job, index, status)
                                          for (job, index), status in zip(tasks, statuses)))
    return 0 if not any(statuses) else 1


def _relay(proc, prefix):
    # TensorFlow's C++ start-up lines (printed before TF_CPP_MIN_LOG_LEVEL takes effect) are
    # left out; everything a task prints is relayed.
    for line in proc.stdout:
        if not line.startswith(('WARNING: All log messages', 'I0000', 'W0000')):
            print(prefix + line, end='', flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--num_workers', type=int, default=2)
    parser.add_argument('--steps', type=int, default=5)
    parser.add_argument('--batch_size', type=int, default=16, help='per worker')
    parser.add_argument('--timeout_s', type=float, default=60.0,
                        help='bound on every wait of every task')
    return launch(parser.parse_args())


if __name__ == '__main__':
    sys.exit(main())

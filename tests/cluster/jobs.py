"""Helpers for tests that run whole jobs: real processes on loopback ports, every one bounded.

Jobs run the trivial model at 8x8 with 10 classes, so a step costs milliseconds and a job is
mostly TensorFlow's import in each process.
"""
import json
import os
import shutil
import subprocess
import sys
import time

from tfhp.launcher import hand_started as hand_started_lib

ROOT = hand_started_lib.ROOT
SMALL = ['--model=trivial', '--image_size=8', '--batch_size=2', '--num_classes=10',
         '--num_warmup_batches=2', '--display_every=1000', '--weight_decay=0']
JOB_TIMEOUT_S = 240
end = hand_started_lib.end


def launch_job(tmp_path, num_ps, num_workers, *tfhp_args, launcher_args=()):
    """Runs a job through `python -m tfhp.launch`; returns (exit status, summary, output)."""
    result = tmp_path / ('job_%d.jsonl' % time.monotonic_ns())
    argv = [sys.executable, '-m', 'tfhp.launch', '--num_ps=%d' % num_ps,
            '--num_workers=%d' % num_workers, '--result_file=%s' % result,
            '--timeout_s=%d' % (JOB_TIMEOUT_S - 30)] + list(launcher_args) + ['--'] + SMALL + list(
                tfhp_args)
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            cwd=ROOT, start_new_session=True)
    try:
        output = proc.communicate(timeout=JOB_TIMEOUT_S)[0]
    finally:
        end(proc)
    summary = json.loads(result.read_text().splitlines()[-1]) if result.exists() else None
    return proc.returncode, summary, output


def hand_started(directory, num_ps, num_workers, args, private=True):
    """A `hand_started_lib.HandStartedJob` of the SMALL model with `args` (`private`: in a
    network namespace of its own where one can be made)."""
    return hand_started_lib.HandStartedJob(directory, num_ps, num_workers, SMALL + list(args),
                                           private=private)


def namespaces(prefix=None):
    """Names of the network namespaces that start with prefix (default: those the launchers
    of this process name, `tfhp.launcher.private_net` and `links`)."""
    prefix = prefix or 'tfhp-%d-' % os.getpid()
    if shutil.which('ip') is None:
        return []
    out = subprocess.run(['ip', '-j', 'netns', 'list'], capture_output=True, text=True,
                         timeout=10, check=True).stdout.strip()
    return [n['name'] for n in json.loads(out or '[]') if n['name'].startswith(prefix)]

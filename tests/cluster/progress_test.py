"""A worker's way through its job (`progress.JobProgress`), driven by scripted control values
as the worker's loop drives it, and the split of its counts (`progress.timed_counts`)."""
import types

import numpy as np
import pytest

from tfhp.cluster import progress as progress_lib

SIGTERM = 15


class Worker:
    """A JobProgress driven like `worker._train_loop` drives it, with what it called back.

    Args:
      initial: [global step, end, stop] before the first step.
      controls: the [global step, end, stop] each step fetches, in order.
      common_end, num_warmup, num_batches: as `JobProgress` takes them.
      stop_requested: whether this task got a stop signal (before its first step).
    """

    def __init__(self, initial, controls, common_end, num_warmup=3, num_batches=10,
                 stop_requested=False):
        self.controls = list(controls)
        self.moves = 0          # calls of move_end
        self.announced = []     # (stop value, global step) of each announcement
        self.ticks = iter(range(1000, 2000))  # the wall clock: one second a read
        self.progress = progress_lib.JobProgress(
            np.array(initial, dtype=np.int64), common_end, num_warmup, num_batches,
            self._move_end, types.SimpleNamespace(requested=stop_requested),
            lambda signum, step: self.announced.append((signum, step)),
            clock=lambda: float(next(self.ticks)))
        self.num_warmup = num_warmup
        self.timed = None  # whether timed steps ran

    def _move_end(self):
        self.moves += 1

    def _steps(self, num_steps, on_step):
        # session.run_steps' contract: at most num_steps (None: unbounded), True ends the loop.
        count = 0
        while num_steps is None or count < num_steps:
            count += 1
            # As a session fetches them: an int64 vector.
            if on_step(np.array(self.controls.pop(0), dtype=np.int64)):
                return

    def run(self):
        """Runs the warm-up and the timed steps; returns the JobProgress."""
        p = self.progress
        if p.warm_more():
            self._steps(self.num_warmup, p.after_warm_step)
        self.timed = p.start_timed()
        if self.timed:
            self._steps(p.timed_limit, p.after_timed_step)
        return p


def _steps(first, last, end, stop=0):
    return [[s, end, stop] for s in range(first, last + 1)]


def test_a_synchronous_worker_alone_warms_up_then_steps_to_the_end_step():
    # The chief set end = 0 + 3 warm-up + 10 timed; this worker's steps move the global step.
    worker = Worker([0, 13, 0], _steps(1, 13, 13), common_end=True)
    p = worker.run()
    assert worker.controls == []
    assert (p.start_step, p.warmup_steps, p.warm_step) == (0, 3, 3)
    assert p.global_steps == list(range(4, 14))
    assert p.first_step_time == 1000.0  # after the first warm-up step
    assert p.timed_start_time == 1001.0
    assert p.end_times == [float(t) for t in range(1002, 1012)]
    assert (p.step, p.end, p.stopped) == (13, 13, 0)
    assert isinstance(p.step, int)
    assert worker.moves == 0 and worker.announced == []


def test_a_synchronous_worker_stops_warming_up_where_the_timed_part_of_the_job_starts():
    # The others warm the job up too: its second warm-up step reads global step 3, where the
    # timed part starts (13 - 10), so its steps from there are timed.
    worker = Worker([0, 13, 0], [[1, 13, 0], [3, 13, 0], [8, 13, 0], [12, 13, 0],
                                 [14, 13, 0]], common_end=True)
    p = worker.run()
    assert worker.controls == []
    assert (p.warmup_steps, p.warm_step) == (2, 3)
    assert p.global_steps == [8, 12, 14]  # the job may pass its end in a step of several


def test_a_synchronous_worker_that_starts_late_takes_no_warm_up_step():
    worker = Worker([5, 13, 0], _steps(6, 13, 13), common_end=True)
    p = worker.run()
    assert (p.warmup_steps, p.warm_step, p.start_step) == (0, 5, 5)
    assert p.global_steps == list(range(6, 14))
    assert p.first_step_time == 1001.0  # the first timed step's end (1000: the timed start)


def test_a_synchronous_worker_that_starts_after_the_end_takes_no_step():
    worker = Worker([13, 13, 0], [], common_end=True)
    p = worker.run()
    assert worker.timed is False
    assert (p.warmup_steps, p.warm_step, p.global_steps, p.first_step_time) == (0, 13, [], None)


def test_a_stop_seen_first_moves_the_common_end_once_and_ends_there():
    # SIGTERM reaches the job at global step 6; the end moves to 6 + STOP_MARGIN = 8.
    controls = (_steps(1, 5, 13) + [[6, 13, SIGTERM]] + _steps(7, 8, 8, SIGTERM) +
                [[99, 8, SIGTERM]])
    worker = Worker([0, 13, 0], controls, common_end=True)
    p = worker.run()
    assert worker.controls == [[99, 8, SIGTERM]]  # not taken: the worker ended at 8
    assert worker.announced == [(SIGTERM, 6)]
    assert worker.moves == 1
    assert p.warmup_steps == 3
    assert p.global_steps == [4, 5, 6, 7, 8]
    assert p.stopped == SIGTERM


def test_a_stop_already_in_the_initial_values_is_not_announced_again():
    worker = Worker([0, 4, SIGTERM], _steps(1, 4, 4, SIGTERM), common_end=True)
    p = worker.run()
    assert (worker.announced, worker.moves) == ([], 0)
    # The end is within num_batches of the start: every step is timed.
    assert (p.warmup_steps, p.global_steps) == (0, [1, 2, 3, 4])


def test_an_asynchronous_worker_takes_its_own_number_of_steps_whatever_the_global_step():
    never = 2 ** 62
    controls = [[g, never, 0] for g in (3, 7, 8, 15, 16, 30, 31, 32, 40)]
    worker = Worker([2, never, 0], controls, common_end=False, num_warmup=2, num_batches=5)
    p = worker.run()
    assert (p.warmup_steps, p.warm_step) == (2, 7)
    assert p.global_steps == [8, 15, 16, 30, 31]
    assert worker.controls == [[g, never, 0] for g in (32, 40)]
    assert len(p.end_times) == p.timed_limit == 5


def test_an_asynchronous_worker_stops_after_the_step_that_reads_the_stop():
    controls = [[1, 0, 0], [2, 0, 0], [3, 0, 0], [4, 0, SIGTERM], [5, 0, SIGTERM]]
    worker = Worker([0, 0, 0], controls, common_end=False, num_warmup=2, num_batches=5)
    p = worker.run()
    assert p.global_steps == [3, 4]
    assert worker.announced == [(SIGTERM, 4)]
    assert worker.moves == 0  # no common end to move
    assert worker.controls == [[5, 0, SIGTERM]]


def test_an_asynchronous_worker_with_its_own_stop_signal_takes_no_step():
    worker = Worker([0, 0, 0], [[1, 0, 0]], common_end=False, num_warmup=2, num_batches=5,
                    stop_requested=True)
    p = worker.run()
    assert worker.timed is False
    assert (p.warmup_steps, p.global_steps) == (0, [])


def test_the_first_and_the_last_timed_loss_are_kept():
    p = Worker([0, 0, 0], [], common_end=False, num_warmup=0).progress
    assert (p.first_loss, p.last_loss) == (None, None)
    assert p.start_timed()
    for loss in (np.float32(3.0), 2.0, 1.5):
        p.after_timed_step(np.array([0, 0, 0], dtype=np.int64), loss=loss)
    assert (p.first_loss, p.last_loss) == (3.0, 1.5)
    assert isinstance(p.first_loss, float)


def test_the_last_timed_step_ends_when_its_work_beside_it_is_settled():
    p = Worker([0, 3, 0], [], common_end=True, num_warmup=0).progress
    p.settled()  # no timed step: nothing to move
    assert p.end_times == []
    assert p.start_timed()  # the clock reads 1000
    for step in (1, 2):
        p.after_timed_step(np.array([step, 3, 0], dtype=np.int64))
    assert p.end_times == [1001.0, 1002.0]
    p.settled()  # priority pushes: its pushes went on after its run
    assert p.end_times == [1001.0, 1003.0] and p.global_steps == [1, 2]


@pytest.mark.parametrize('common_end, limit', [(True, None), (False, 10)])
def test_the_timed_limit_is_the_end_step_s_for_synchronous_workers(common_end, limit):
    assert Worker([0, 13, 0], [], common_end).progress.timed_limit == limit


def test_timed_counts_split_the_warm_up_s_from_the_timed_steps_():
    warm = {'dropped_gradients': 2}
    end = {'dropped_gradients': 7}
    assert progress_lib.timed_counts(end, warm) == {'dropped_gradients': 5,
                                                    'warmup_dropped_gradients': 2}


def test_timed_counts_summarise_the_timed_staleness_only():
    bins = [0] * 17
    warm = {'staleness_count': 2, 'staleness_sum': 30, 'staleness_max': 16,
            'stale_gradients_dropped': 1, 'staleness_histogram': bins[:16] + [2]}
    end = {'staleness_count': 6, 'staleness_sum': 36, 'staleness_max': 16,
           'stale_gradients_dropped': 3, 'staleness_histogram': [1, 2, 0, 1] + bins[4:16] + [2]}
    split = progress_lib.timed_counts(end, warm)
    assert split == {
        'staleness_count': 4, 'staleness_sum': 6, 'staleness_max': 3,
        'stale_gradients_dropped': 2, 'staleness_histogram': [1, 2, 0, 1] + bins[4:],
        'staleness_mean': 1.5,
        'warmup_staleness_count': 2, 'warmup_staleness_sum': 30,
        'warmup_stale_gradients_dropped': 1, 'warmup_staleness_histogram': bins[:16] + [2]}

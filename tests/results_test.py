"""The result record's schema (tfhp.runner.results): its JSON keys are its fields, it reads back
what it wrote, and a run's record holds the run's numbers in its typed fields."""
import dataclasses
import json

import pytest
import tensorflow.compat.v1 as tf

from tests import testing
from tfhp.runner import benchmark
from tfhp.runner import results


def _every_field():
    """A Result with a value in every field (a worker's timed record with every count)."""
    counters = results.Counters(
        dropped_gradients=2, staleness_count=9, staleness_sum=3, staleness_max=2,
        staleness_mean=1 / 3, stale_gradients_dropped=1, staleness_histogram=[7, 1, 1])
    return results.Result(
        setup=results.Setup(mode='train', model='lenet', batch_size=8, images_per_step=16,
                            image_size=28, num_devices=2, num_params=431080,
                            compute_dtype='float32'),
        task=results.Task(job_name='worker', task_index=1),
        config={'model': {'name': 'lenet'}},
        environment=results.Environment('0.1.0', '2.21.0', 'host', '2026-01-02T03:04:05'),
        figures=results.Figures(num_steps=3, images_per_sec=160.0,
                                images_per_sec_spread={'mean': 161.0, 'std': 1.0, 'p50': 160.5,
                                                       'p90': 162.0},
                                step_time_ms={'mean': 100.0, 'std': 1.0, 'p50': 99.0,
                                              'p90': 101.0},
                                wall_time_s=0.3, emulated_compute_ms=95.0),
        outcome=results.Outcome(
            final_loss=2.5, learning_rate=0.1, first_loss=2.9, last_loss=2.6, global_step=7, checkpoints=[[7, 0.3]],
            evaluations=[{'global_step': 7, 'top_1_accuracy': 0.5, 'top_5_accuracy': 0.75}],
            train_top1=0.25, train_top5=0.5, top_1_accuracy=0.5, top_5_accuracy=0.75,
            replica_steps=[3, 3], replica_images_per_sec=[80.0, 80.0], skipped_records=1),
        counters=counters,
        warmup_counters=dataclasses.replace(counters, staleness_count=1),
        worker=results.Worker(
            warmup_steps=1, images=48, dropped_images=32, warmup_dropped_images=32,
            session_start_time=100.0, session_ready_time=101.0, first_step_time=102.0,
            timed_start_time=102.5, end_times=[103.0, 103.1, 103.2], global_steps=[5, 6, 7],
            start_global_step=0, global_steps_per_sec=10.0, variables_checksum=1.5,
            variable_bytes_by_device={'/job:ps/task:0/device:CPU:0': 1724320}, stopped_by=15,
            startup_times={'started': 95.0, 'imported': 98.0, 'peers': 99.0, 'graph': 99.5},
            events=[{'time': 103.0, 'event': 'saved a checkpoint at global step 7'}]))


def _group_keys(group_class, prefix=''):
    return {prefix + f.name for f in dataclasses.fields(group_class)}


def test_json_keys_are_the_fields_of_the_groups():
    expected = ({'config'} | _group_keys(results.Setup) | _group_keys(results.Task)
                | _group_keys(results.Environment) | _group_keys(results.Figures)
                | _group_keys(results.Outcome) | _group_keys(results.Counters)
                | _group_keys(results.Counters, 'warmup_') | _group_keys(results.Worker))
    flat = _every_field().to_json()
    assert set(flat) == expected
    # No two groups share a key: every field of every group is one key.
    assert len(flat) == 1 + sum(len(dataclasses.fields(g)) for g in (
        results.Setup, results.Task, results.Environment, results.Figures, results.Outcome,
        results.Counters, results.Counters, results.Worker))
    assert flat['warmup_staleness_count'] == 1 and flat['staleness_count'] == 9
    assert flat['images_per_sec'] == 160.0 and flat['job_name'] == 'worker'


def test_fields_defaulting_to_none_are_left_out_while_none():
    record = dataclasses.replace(
        _every_field(), figures=results.Figures(), outcome=results.Outcome(global_step=4),
        counters=results.Counters(), warmup_counters=results.Counters(),
        worker=dataclasses.replace(_every_field().worker, first_step_time=None,
                                   stopped_by=None))
    flat = record.to_json()
    # A run that timed no step: today's {'num_steps': 0, 'images_per_sec': 0.0} only.
    assert flat['num_steps'] == 0 and flat['images_per_sec'] == 0.0
    assert 'step_time_ms' not in flat and 'wall_time_s' not in flat
    assert flat['global_step'] == 4 and 'final_loss' not in flat
    assert not any(k.startswith('stal') or 'dropped_gradients' in k for k in flat)
    # A worker's first step time is always there (None: it took no step); stopped_by only
    # when a signal stopped the job.
    assert flat['first_step_time'] is None
    assert 'stopped_by' not in flat
    no_worker = dataclasses.replace(record, worker=None).to_json()
    assert not set(no_worker) & _group_keys(results.Worker)


@pytest.mark.parametrize('record', [
    _every_field(),
    dataclasses.replace(_every_field(), worker=None, warmup_counters=results.Counters(),
                        counters=results.Counters(), outcome=results.Outcome(),
                        figures=results.Figures()),
])
def test_from_dict_reads_back_what_to_json_wrote(record):
    assert results.Result.from_dict(record.to_json()) == record
    # Through a JSON line too (a --result_file's).
    line = json.dumps(record.to_json(), sort_keys=True)
    assert results.Result.from_dict(json.loads(line)) == record


def test_from_dict_refuses_unknown_keys_and_missing_fields():
    flat = _every_field().to_json()
    with pytest.raises(ValueError, match='images_per_second'):
        results.Result.from_dict(dict(flat, images_per_second=1.0))
    del flat['model']
    with pytest.raises(TypeError):
        results.Result.from_dict(flat)


def test_a_one_process_run_has_its_numbers_in_the_typed_fields(tmp_path):
    out = tmp_path / 'results.jsonl'
    lines = []
    cfg = testing.small_config(num_batches=3, run={'result_file': str(out)})
    returned = benchmark.run(cfg, log=lines.append)
    written = json.loads(out.read_text())
    result = results.Result.from_dict(written)
    # JSON makes the config's tuples lists.
    assert result.to_json() == json.loads(json.dumps(returned))
    # The keys the record had before its schema: a train run's, no more, no less.
    assert set(returned) == {
        'images_per_sec', 'images_per_sec_spread', 'step_time_ms', 'num_steps', 'wall_time_s',
        'final_loss', 'learning_rate', 'global_step', 'checkpoints', 'mode', 'model', 'batch_size',
        'images_per_step', 'image_size', 'num_devices', 'num_params', 'compute_dtype',
        'job_name', 'task_index', 'config', 'tfhp_version', 'tf_version', 'host', 'time'}
    # trivial at 16x16x3, 10 classes: 768*1+1 + 1*4096+4096 + 4096*10+10.
    assert result.setup == results.Setup(
        mode='train', model='trivial', batch_size=4, images_per_step=4, image_size=16,
        num_devices=1, num_params=769 + 8192 + 40970, compute_dtype='float32')
    assert result.task == results.Task(job_name='', task_index=0)
    assert result.config == json.loads(json.dumps(cfg.to_dict()))
    assert result.environment.tf_version == tf.__version__
    figures = result.figures
    assert figures.num_steps == 3
    assert figures.images_per_sec == pytest.approx(3 * 4 / figures.wall_time_s)
    assert figures.step_time_ms['p50'] > 0
    assert figures.images_per_sec_spread['p50'] == pytest.approx(
        4 / figures.step_time_ms['p50'] * 1000)
    # 1 warm-up + 3 timed steps; no checkpoint without --train_dir.
    assert result.outcome.global_step == 4
    assert result.outcome.checkpoints == []
    assert 0 < result.outcome.final_loss < 10
    assert result.counters == results.Counters()  # the replicated manager counts nothing
    assert result.worker is None
    assert 'total images/sec: %.2f' % figures.images_per_sec in '\n'.join(lines)


def test_an_async_run_has_its_staleness_in_the_typed_counters():
    cfg = testing.small_config(num_batches=3, device={'num_devices': 2},
                               cluster={'cross_replica_sync': False})
    result = results.Result.from_dict(benchmark.run(cfg, log=lambda _: None))
    counters = result.counters
    # 2 replicas, 1 warm-up + 3 timed steps each: every update's staleness measured.
    assert counters.staleness_count == 8
    assert sum(counters.staleness_histogram) == 8
    assert counters.staleness_sum == sum(i * n for i, n in
                                         enumerate(counters.staleness_histogram))
    assert counters.staleness_mean == pytest.approx(counters.staleness_sum / 8)
    assert counters.dropped_gradients is None
    assert result.outcome.replica_steps == [3, 3]
    assert result.figures.num_steps == 6

"""The links study: its arithmetic from hand-made records, and each study at a tiny size.

The jobs need emulated links (root, network namespaces, tc); where the machine cannot make
them those tests are skipped with the reason. Each runs the trivial model at 8x8 for 2 steps.
"""
import json
import os
import re
import subprocess
import sys

from absl import app
import pytest

from experiments import common
from experiments import link_jobs
from experiments import links_report
from experiments import links_study
from experiments import stats
from tfhp.launcher import link_config

ROOT = common.REPO_ROOT


def _record(model, rate, k, w, step_ms, turns_ms=None, repeats=(0.95, 1.0, 1.05)):
    record = {'model': model, 'rate': rate, 'num_ps': k, 'num_workers': w, 'repeats': 3,
              'global_step_ms': stats.summarise([step_ms * f for f in repeats])}
    if turns_ms:
        record['turns_ms'] = turns_ms
    return record


def test_rows_whose_cores_were_busy_are_counted_under_the_table(capsys):
    records = [dict(_record('null_dense', '1gbit', k, 4, 300.0),
                    cores_busy=stats.summarise([busy, busy]))
               for k, busy in ((1, 0.5), (2, 0.89), (3, 0.96))]
    assert links_report.cores_bound_line(records[:2]) is None
    links_report.report_saturation(records)
    out = capsys.readouterr().out
    assert ('cores busy: 1 of 3 rows had the cores at least 90% busy over the timed steps'
            in out)
    header, _, _, third = out.splitlines()[:4]
    assert re.search(r'launcher bound ms +cores busy +ps MB out', header)
    assert '0.96 [0.96\u20130.96]' in third


def test_saturation_conclusion_fits_the_growth_per_worker_and_the_ps_ratio():
    # 1 ps: 100 + 900 ms per worker; 2 ps: about half; loopback: 50 ms per worker.
    records = [_record('null_dense', '300mbit', 1, w, 100 + 900 * w, 936 * w)
               for w in (1, 2, 4)]
    records += [_record('null_dense', '300mbit', 2, w, 100 + 450 * w, 468 * w)
                for w in (1, 2, 4)]
    records += [_record('null_dense', 'loopback', 1, w, 50 * w) for w in (1, 2, 4)]
    links_report.report_saturation(records)   # marks: 2 ps against 1 ps at each W
    assert records[5]['vs_reference']['global_step_ms'] == 'lower'    # W=4: 1900 vs 3700
    lines = links_report.saturation_conclusion(records)
    assert lines[0] == ('null_dense 300mbit, 1 ps: step = 100 + 900 ms x W (fit over W = 1, '
                        '2, 4, r^2 1.000); the in-turn estimate grows 936 ms per worker: '
                        'measured / estimate 0.96; less loopback\'s step: 100 + 850 ms x W')
    assert lines[1].startswith('null_dense 300mbit, 2 ps: step = 100 + 450 ms x W')
    assert lines[3] == ('null_dense 300mbit, 2 ps / 1 ps, step time: W=1 0.55 *, '
                        'W=2 0.53 *, W=4 0.51 *')


def test_a_fit_needs_two_distinct_workers():
    assert links_report.fit([(1, 5.0)]) is None
    intercept, slope, r2 = links_report.fit([(1, 3.0), (2, 5.0), (3, 7.0)])
    assert (intercept, slope, r2) == (pytest.approx(1.0), pytest.approx(2.0), 1.0)


def test_expected_figures_follow_the_placement_rates_and_dtype():
    chief = {'num_params': 1000, 'variable_bytes_by_device': {
        '/job:ps/task:0/device:CPU:0': 2400, '/job:ps/task:1/device:CPU:0': 1600}}
    rates = {'ps 0': 8e3, 'ps 1': 8e3, 'worker 0': 8e3, 'worker 1': 8e3, 'worker 2': 8e3}
    got = link_jobs.expected(chief, 2, 3, rates, ['--model=x'])
    # ps 0 sends 3 x 2400 bytes per step at 1000 bytes/s: 7.2 s; in turn with the gradients.
    assert got == {'model_mb': 0.004, 'bound_ms': pytest.approx(7200.0),
                   'turns_ms': pytest.approx(14400.0)}
    half = link_jobs.expected(chief, 2, 3, rates, ['--gradient_transfer_dtype=bfloat16'])
    assert half['turns_ms'] == pytest.approx(7200.0 + 3600.0)
    ring = link_jobs.expected(chief, 0, 3, rates, ['--variable_update=collective_all_reduce'])
    assert ring == {'model_mb': 0.004, 'bound_ms': pytest.approx(4000 * 4 / 3.0)}
    assert 'turns_ms' not in link_jobs.expected(chief, 2, 3, rates,
                                                ['--cross_replica_sync=false'])
    # Sign deltas coming down: the reads are 1/32 of float32's, the gradients unchanged.
    deltas = link_jobs.expected(chief, 2, 3, rates, ['--variable_update=distributed_replicated',
                                                     '--downlink_compression=sign'])
    assert deltas['turns_ms'] == pytest.approx(7200.0 / 32 + 7200.0)
    # 10% top-k both ways: values and indices of a tenth of the elements, 0.2 of the bytes.
    sparse = link_jobs.expected(chief, 2, 3, rates, [
        '--variable_update=distributed_replicated', '--gradient_compression=topk',
        '--downlink_compression=topk', '--compression_fraction=0.1'])
    assert sparse['turns_ms'] == pytest.approx(0.2 * 14400.0)
    assert link_jobs.expected(chief, 2, 3, None, []) == {'model_mb': 0.004}   # loopback


def test_job_args_partition_only_parameter_server_variables():
    args = link_jobs.job_args('trivial', 2, 1)
    assert link_jobs.PARTITION in args and '--num_batches=2' in args
    assert link_jobs.PARTITION not in link_jobs.job_args(
        'trivial', 2, 1, ['--variable_update=collective_all_reduce'])


def test_a_profile_adds_its_emulated_model(monkeypatch):
    monkeypatch.setattr(link_jobs, 'MODELS', dict(link_jobs.MODELS))
    path = os.path.join(common.REPO_ROOT, 'tests', 'data', 'resnet20_profile.json')
    assert link_jobs.add_emulated(path) == 'resnet20@emulated'
    assert link_jobs.job_args('resnet20@emulated', 3, 1)[:3] == [
        '--emulated_compute=' + path, '--model=resnet20', '--data_name=cifar10']


def test_a_transfer_spec_sizes_a_pipelined_transfers_chunks_and_window():
    priority = link_jobs.PRIORITY + '@256k/128k'
    args = link_jobs.transfer_args(priority)
    assert args[:-2] == link_jobs.TRANSFERS[link_jobs.PRIORITY]
    assert args[-2:] == ['--ps_chunk_bytes=262144', '--ps_window_bytes=131072']
    assert link_jobs.transfer_args(link_jobs.PIPELINED + '@1m')[-1] == (
        '--ps_chunk_bytes=1048576')
    assert link_jobs.transfer_label(priority) == (
        'background priority, 256k chunks, 128k window')
    assert link_jobs.transfer_label(link_jobs.IN_TURN) == 'in turn'
    assert link_jobs.transfer_args(priority + '+256k')[-3:] == args[-2:] + [
        '--layer_slice_bytes=262144']
    assert link_jobs.transfer_args(link_jobs.IN_TURN + '+1m')[-1] == (
        '--layer_slice_bytes=1048576')
    assert link_jobs.transfer_label(priority + '+256k') == (
        'background priority, 256k chunks, 128k window, 256k layer slices')
    for spec, names in (('in turn@256k', "'in turn' sends no chunks"), ('pipelined@lots', 'lots'),
                        ('pipelines', 'unknown'), ('pipelined+thin', 'thin'),
                        ('pull-clocked@64k-1m', 'tapered chunks were retired'),
                        ('pull-clocked@1m/1m', "'pull-clocked' sends no window")):
        with pytest.raises(ValueError, match=names):
            link_jobs.transfer_args(spec)
    with pytest.raises(app.UsageError, match="--transfers: transfer 'pipelines': unknown"):
        link_jobs.check_transfers('transfers', [priority, 'pipelines'])
    [row] = links_study.saturation_rows(['null_dense'], ['1gbit'], [1], [2], 2, 1,
                                        transfers=[priority])
    assert row.args[3][-2:] == args[-2:]
    assert links_report._subject(row.args[0]) == (
        'null_dense, background priority, 256k chunks, 128k window')


def test_rows_and_plot_paths():
    assert len(links_study.saturation_rows(['trivial'], ['1gbit', 'loopback'], [1, 2], [1, 2, 4],
                                           2, 1)) == 12
    cubic = link_config.LinkOptions(congestion_control='cubic')
    [row] = links_study.saturation_rows(['null_dense'], ['1gbit'], [3], [2], 2, 1,
                                        transfers=[link_jobs.PIPELINED], link_options=cubic)
    labels, num_ps, num_workers, args, rate = row.args
    assert (labels['transfer'], num_ps, num_workers, rate) == ('pipelined', 3, 2, '1gbit')
    assert args[-2:] == ['--ps_transfer=pipelined', '--ps_chunk_bytes=524288']
    assert row.keywords == {'link_options': cubic, 'colocate_ps': False}
    # A ps beside each worker: as many ps tasks as workers, on the workers' hosts.
    rows = links_study.modes_rows('null_dense', '1gbit', [2, 4], 2, 1, names=['colocated', 'ps'])
    assert [(r.args[1], r.args[2], r.keywords['colocate_ps']) for r in rows] == [
        (2, 2, True), (1, 2, False), (4, 4, True), (1, 4, False)]
    assert links_report._subject(dict(labels)) == 'null_dense, pipelined'
    assert links_report._subject(dict(labels, congestion_control='cubic')) == (
        'null_dense, pipelined, TCP cubic')
    assert links_report._subject({'model': 'lenet'}) == 'lenet'  # records from before
    assert [label for label, _, _ in links_study.backup_configurations(3, 50)] == [
        'every gradient, no straggler', 'every gradient, straggler', 'one backup, straggler',
        'one backup, no straggler']
    # Downlinks multiply the rows of the updates whose workers keep copies only.
    rows = links_study.precision_rows('null_dense', '1gbit', 2,
                                      ['parameter_server', 'distributed_replicated'], 2, 1,
                                      schemes=['float32', 'sign'], downlinks=['none', 'sign'])
    labels = [row.args[0]['label'] for row in rows]
    replicated = 'distributed_replicated, '
    assert labels == ['parameter_server, float32', 'parameter_server, sign',
                      replicated + 'float32', replicated + 'float32, sign down',
                      replicated + 'sign', replicated + 'sign, sign down']
    assert '--downlink_compression=sign' in rows[-1].args[3]
    assert links_report._sent(rows[-1].args[0]) == 'sign, sign down'
    # A fraction reaches the jobs whose schemes send a share of the elements, and no other.
    float32, topk = links_study.precision_rows('null_dense', '1gbit', 2, ['distributed_replicated'],
                                               2, 1, schemes=['float32'],
                                               downlinks=['none', 'topk'], fraction=0.1)
    assert '--compression_fraction=0.1' in topk.args[3]
    assert not any(a.startswith('--compression_fraction') for a in float32.args[3])
    assert links_study.plot_path('a/b.png', 'modes', True) == 'a/b_modes.png'
    assert links_study.plot_path('a/b.png', 'modes', False) == 'a/b.png'


def test_the_transfers_of_a_model_share_its_panel_and_its_estimates(monkeypatch):
    drawn = {}
    monkeypatch.setattr(links_report.plots, 'line_panels',
                        lambda path, panels, *a, **kw: drawn.update(panels=panels))
    records = [dict(_record('lenet', '1gbit', 1, w, ms * w, 150.0 * w, repeats=(1.0,)),
                    transfer=transfer, bound_ms=50.0 * w)
               for transfer, ms in ((link_jobs.BACKGROUND, 80.0), (link_jobs.WINDOW, 70.0))
               for w in (1, 2)]
    links_report.plot_saturation(records, 'unused.png')
    (title, series, _), = drawn['panels']
    assert title == 'lenet, 1gbit links'
    assert [(label, [s['median'] for s in summaries]) for label, _, summaries, _ in series] == [
        ('1 ps, background pulls', [80.0, 160.0]),
        ('1 ps, reads and gradients in turn', [150.0, 300.0]),
        ('1 ps, W S / (K B)', [50.0, 100.0]),
        ('1 ps, background window', [70.0, 140.0])]
    assert series[1][3]['color'] == 'black' and series[3][3]['color'] == 'C1'


def test_panels_of_one_transfer_each_name_it_and_colour_by_ps_count(monkeypatch):
    # Chunks sized per rate: each panel's one transfer differs, its legend entries do not.
    drawn = {}
    monkeypatch.setattr(links_report.plots, 'line_panels',
                        lambda path, panels, *a, **kw: drawn.update(panels=panels))
    records = [dict(_record('null_dense', rate, k, 2, 100.0, 150.0, repeats=(1.0,)),
                    transfer=transfer)
               for rate, transfer in (('300mbit', 'pull-clocked@128k'),
                                      ('1gbit', 'pull-clocked@256k'))
               for k in (1, 2)]
    links_report.plot_saturation(records, 'unused.png')
    titles = [title for title, _, _ in drawn['panels']]
    assert titles == ['null_dense, pull-clocked, 128k chunks, 300mbit links',
                      'null_dense, pull-clocked, 256k chunks, 1gbit links']
    colours = [{label: style['color'] for label, _, _, style in series
                if label.endswith('measured')} for _, series, _ in drawn['panels']]
    assert colours[0] == colours[1] == {'1 ps, measured': 'C0', '2 ps, measured': 'C1'}


def test_records_appended_by_several_runs_are_drawn_by_ps_count_and_workers(monkeypatch):
    drawn = {}
    monkeypatch.setattr(links_report.plots, 'line_panels',
                        lambda path, panels, *a, **kw: drawn.update(panels=panels))
    # A file of two runs: 3 ps on 2 and 4 workers, then 1 ps, then 3 ps on 1 worker.
    records = [_record('null_dense', '300mbit', k, w, 100.0 * w, 150.0 * w, repeats=(1.0,))
               for k, w in ((3, 2), (3, 4), (1, 1), (1, 2), (3, 1))]
    links_report.plot_saturation(records, 'unused.png')
    (_, series, _), = drawn['panels']
    measured = [(label, xs, style['color']) for label, xs, _, style in series
                if label.endswith('measured')]
    assert measured == [('1 ps, measured', [1, 2], 'C0'), ('3 ps, measured', [1, 2, 4], 'C1')]


def test_replotted_files_merge_the_runs_of_a_row_and_keep_named_files_apart(monkeypatch,
                                                                             tmp_path):
    # The same study at two commits, in alternating invocations of one run each: a row's runs
    # are one median [min-max]; the named file's are lines of their own.
    drawn = {}
    monkeypatch.setattr(links_report.plots, 'line_panels',
                        lambda path, panels, *a, **kw: drawn.update(panels=panels, **kw))

    def record(ms, commit):
        run = {'model': 'null_dense', 'rate': '1gbit', 'num_ps': 2, 'num_workers': 2,
               'study': 'saturation', 'label': 'null_dense 1gbit, 2 ps',
               'transfer': 'pull-clocked@256k', 'seed': 1, 'global_step_ms': ms}
        return dict(run, global_step_ms=stats.summarise([ms]), repeats=1, runs=[run],
                    seeds=[1], caption='m; d; commit ' + commit)
    for name, times in (('before', (200.0, 230.0)), ('after', (150.0, 170.0, 160.0))):
        (tmp_path / (name + '.jsonl')).write_text(''.join(
            json.dumps(record(ms, name)) + '\n' for ms in times))
    links_study.replot(['%s=before 9c8a8bc' % (tmp_path / 'before.jsonl'),
                        str(tmp_path / 'after.jsonl')], ['saturation'], 'unused.png')
    (title, series, _), = drawn['panels']
    assert title == 'null_dense, 1gbit links'
    assert [(label, [(s['median'], s['min'], s['max']) for s in summaries])
            for label, _, summaries, _ in series] == [
        ('2 ps, pull-clocked, 256k chunks, before 9c8a8bc', [(215.0, 200.0, 230.0)]),
        ('2 ps, pull-clocked, 256k chunks', [(160.0, 150.0, 170.0)])]
    assert drawn['title'].endswith('of 2-3 repeats')
    assert drawn['caption'] == 'm; d; commits after, before'
    assert links_study.named({'label': 'a'}, '') == {'label': 'a'}


def test_the_downlink_plot_groups_by_gradients_and_bars_by_downlink(monkeypatch):
    drawn = {}
    monkeypatch.setattr(links_report.plots, 'bar_panels',
                        lambda path, panels, **kw: drawn.update(panels=panels, **kw))
    records = []
    for up in ('float32', 'sign'):
        for down in ('none', 'sign'):
            record = _record('null_dense', '1gbit', 1, 2, 100.0 if down == 'none' else 50.0)
            records.append(dict(record, update='distributed_replicated', gradients=up,
                                downlink=down))
    links_report.plot_precision(records, 'unused.png')
    step_panel = drawn['panels'][0]
    assert step_panel[2] == ['float32 up', 'sign up']
    assert [(label, [s['median'] for s in summaries]) for label, summaries in step_panel[3]] == [
        ('float32 down', [100.0, 100.0]), ('sign down', [50.0, 50.0])]
    assert drawn['title'].startswith('gradients up (groups) and variables down (bars)')


def _tiny(study_rows, index, tmp_path, study):
    """Runs one row of a study once and its report and plot; returns the combined record."""
    (record,) = common.repeat_in_rounds([study_rows[index]], 1, 7, link_jobs.FIGURES)
    assert record['runs'][0]['status'] == 0, record['runs'][0].get('error')
    links_report.REPORTS[study]([record])
    try:
        links_report.PLOTS[study]([record], str(tmp_path / ('%s.png' % study)))
    except ImportError:
        pass  # matplotlib is optional; tests/experiments/plots_test.py covers the refusal
    return record


@pytest.mark.cluster
def test_saturation_command_runs_one_tiny_job(tmp_path, links_available):
    result = tmp_path / 'links.jsonl'
    proc = subprocess.run(
        [sys.executable, '-m', 'experiments.links_study', '--studies=saturation',
         '--models=trivial', '--rates=200mbit', '--workers=1', '--num_ps=1', '--repeats=1',
         '--steps=2', '--result_file=%s' % result], capture_output=True, text=True,
        timeout=240, cwd=ROOT, env=dict(os.environ, TF_CPP_MIN_LOG_LEVEL='2'))
    assert proc.returncode == 0, proc.stderr[-2000:]
    (record,) = [json.loads(line) for line in result.read_text().splitlines()]
    assert (record['study'], record['rate'], record['num_workers']) == ('saturation',
                                                                         '200mbit', 1)
    # trivial at 8x8, 10 classes: 49,355 float32 parameters, read and sent back each step.
    assert record['model_mb'] == pytest.approx(0.19742)
    assert record['bound_ms'] == pytest.approx(0.19742e6 * 8 / 200e6 * 1000)
    assert record['global_step_ms']['median'] > 0 and 'step = ' not in proc.stdout
    assert 0 < record['cores_busy']['median'] <= 1


@pytest.mark.cluster
def test_modes_and_precision_run_a_tiny_job_each(tmp_path, links_available):
    modes = links_study.modes_rows('trivial', '200mbit', [2], 2, 1, names=['all_reduce'])
    record = _tiny(modes, 0, tmp_path, 'modes')
    assert record['label'] == 'collective_all_reduce' and 'turns_ms' not in record
    assert record['worker_sent_mb']['median'] > 0
    precision = links_study.precision_rows('trivial', '200mbit', 2, ['parameter_server'], 2, 1)
    record = _tiny(precision, 1, tmp_path, 'precision')
    assert record['gradients'] == 'bfloat16'
    # The gradient goes up in 16 bits, the variables come down in 32.
    assert record['turns_ms'] == pytest.approx(1.5 * record['bound_ms'])


def test_extra_tfhp_flags_reach_every_job_and_name_its_record():
    [row] = links_study.modes_rows('null_dense', '1gbit', [2], 2, 1, names=['pipelined'])
    assert links_study.with_flags([row], []) == [row]
    [flagged] = links_study.with_flags([row], ['--ps_chunk_bytes=1048576'])
    labels, _, _, args, _ = flagged.args
    assert args == list(row.args[3]) + ['--ps_chunk_bytes=1048576']
    assert labels['tfhp_flags'] == ['--ps_chunk_bytes=1048576']
    assert labels['label'] == row.args[0]['label'] + ', --ps_chunk_bytes=1048576'
    assert flagged.keywords == row.keywords

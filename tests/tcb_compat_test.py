"""tf_cnn_benchmarks command lines, as its README and TensorFlow's performance guides print
them, run unchanged through the `tfhp` command and end with its result line.

Each line is shrunk by appending tfhp flags (a later flag wins): --image_size, --batch_size,
--num_batches (mostly 1), --num_warmup_batches (mostly 0), and --num_gpus=2 where a line asks
for 8 GPUs (tfhp runs --num_gpus towers on virtual CPU devices; 8 towers of vgg16 would not fit
this machine's memory). GPU-only settings have CPU equivalents here: --all_reduce_spec=nccl
becomes xring (tfhp refuses nccl with --device=cpu, exit 2), and data-format NCHW is dropped
(the CPU build rejects it). ResNet-50 becomes lenet in the float16 lines, where this CPU has
no fast float16 filter-gradient kernel (15 s per resnet50 step at 32x32, 2 towers of 1 image),
and in the XLA line (XLA takes ~40 s to compile resnet50's step on it).

Most lines run in this process (`cli.main`, output captured); lines whose settings TensorFlow
reads once per process (thread pools, --mkl's and --xla's environment) run as `python -m tfhp`,
started with the module's first test so that they run beside the others (under pytest-xdist,
when their test asks: `testing.selected`).
"""
import os
import re
import sys

import numpy as np
import pytest

from tests import testing
from tests.pipelines import shapes
from tfhp import cli
from tfhp.runner import devices

# One timed step and no warm-up: a result line needs no more, and on the big nets each step
# more (a 25M-61M parameter update) was a tenth to a third of their line's time.
TINY = ['--image_size=32', '--batch_size=2', '--num_batches=1', '--num_warmup_batches=0',
        '--display_every=1']

# (source, the line as printed there, the flags appended here).
IN_PROCESS = [
    ('README, getting started',
     '--num_gpus=1 --batch_size=32 --model=resnet50 --variable_update=parameter_server', TINY),
    ('performance_models.md, VGG16 on 8 GPUs, synthetic data',
     '--local_parameter_device=cpu --num_gpus=8 --batch_size=32 --model=vgg16 '
     '--variable_update=parameter_server --nodistortions', TINY + ['--num_gpus=2']),
    ('performance_models.md, replicated ResNet-50',
     '--local_parameter_device=cpu --num_gpus=8 --batch_size=64 --model=resnet50 '
     '--variable_update=replicated', TINY + ['--num_gpus=2']),
    ('benchmarks.md, float16 with NCCL all-reduce (nccl -> xring, resnet50 -> lenet)',
     '--num_gpus=8 --batch_size=256 --model=lenet --use_fp16 --variable_update=replicated '
     '--all_reduce_spec=xring', ['--image_size=8', '--batch_size=2', '--num_batches=2',
                                 '--num_warmup_batches=1', '--num_gpus=2']),
    ('automatic loss scaling (benchmark_cnn.py flags)',
     '--model=lenet --use_fp16 --fp16_enable_auto_loss_scale --fp16_inc_loss_scale_every_n=2 '
     '--fp16_loss_scale=128 --variable_update=independent --num_gpus=2',
     ['--image_size=8', '--batch_size=2', '--num_batches=3', '--num_warmup_batches=1']),
    ('inference benchmark',
     '--forward_only=True --model=resnet50 --batch_size=64 --num_gpus=1', TINY),
    ('CIFAR-10 ResNet to accuracy, epochs and a piecewise schedule',
     '--data_name=cifar10 --model=resnet20 --batch_size=128 --optimizer=momentum '
     '--momentum=0.9 --weight_decay=0.0001 --num_epochs=160 '
     '--piecewise_learning_rate_schedule=0.1;80;0.01;120;0.001 --print_training_accuracy',
     ['--batch_size=2', '--num_epochs=0.00008', '--num_warmup_batches=1']),
    ('exponential decay (inception-style flags)',
     '--model=googlenet --optimizer=rmsprop --init_learning_rate=0.045 '
     '--num_epochs_per_decay=2 --learning_rate_decay_factor=0.94 '
     '--minimum_learning_rate=0.0001 --gradient_clip=5.0', TINY),
    ('MLPerf-style ResNet-50 v1.5: evaluation during training to a target',
     '--model=resnet50_v1.5 --optimizer=momentum --resnet_base_lr=0.128 '
     '--eval_during_training_every_n_steps=1 --num_eval_batches=1 --eval_batch_size=50 '
     '--stop_at_top_1_accuracy=0.749 --num_batches=1000', TINY + ['--eval_batch_size=2']),
    ('all-reduce spec and gradient repacking',
     '--model=alexnet --num_gpus=2 --variable_update=replicated '
     '--all_reduce_spec=pscpu:32k:xring --gradient_repacking=2 --compact_gradient_transfer',
     ['--image_size=64'] + TINY[1:]),
]


def _shapes_dir(root):
    directory = os.path.join(root, 'shapes')
    if not os.path.exists(directory):
        shapes.make_shapes(directory)
    return directory


def _in_process(args, capsys):
    cli.FLAGS.unparse_flags()
    cli.FLAGS(['tfhp'] + args)
    try:
        status = cli.main(['tfhp'])
    finally:
        cli.FLAGS.unparse_flags()
    out = capsys.readouterr()
    return status, out.out, out.err


def _assert_result_line(status, out, err):
    assert status == 0, err
    match = re.search(r'^total images/sec: ([0-9.]+)', out, re.M)
    assert match and float(match.group(1)) > 0, out


@pytest.mark.parametrize('source, line, appended', IN_PROCESS,
                         ids=[source for source, _, _ in IN_PROCESS])
def test_tf_cnn_benchmarks_line_runs_unchanged(source, line, appended, capsys):
    del source
    _assert_result_line(*_in_process(line.split() + appended, capsys))


def test_tools_and_tf_data_lines(tmp_path, capsys):
    """Profiling outputs and tf.data settings on a small ImageNet-format data set."""
    line = ('--model=trivial --data_dir={data} --use_datasets=True --datasets_use_caching '
            '--datasets_num_private_threads=2 --distortions --trace_file={out}/trace.txt '
            '--use_chrome_trace_format=False --graph_file={out}/graph.pbtxt '
            '--partitioned_graph_file_prefix={out}/partition --tfprof_file={out}/tfprof.pb')
    args = line.format(data=_shapes_dir(str(tmp_path)), out=tmp_path).split()
    _assert_result_line(*_in_process(args + ['--image_size=16'] + TINY[1:], capsys))
    written = sorted(os.listdir(tmp_path))
    for name in ('graph.pbtxt', 'tfprof.pb', 'trace.txt'):
        assert name in written
    assert any(name.startswith('partition_job_localhost') for name in written)


def test_batch_group_size_line_reads_groups_of_batches(tmp_path, capsys):
    """--batch_group_size=2 on RecordInput data: its steps count one batch each."""
    args = ['--model=trivial', '--data_dir=' + _shapes_dir(str(tmp_path)),
            '--batch_group_size=2', '--image_size=16'] + TINY[1:] + ['--num_batches=3']
    status, out, err = _in_process(args, capsys)
    _assert_result_line(status, out, err)
    losses = [float(v) for v in re.findall(r'^step \d+\s.*loss: (\S+)$', out, re.M)]
    assert len(losses) == 3 and all(np.isfinite(losses)), out


# benchmark_cnn_distributed_test's evaluations: a distributed run's training flags, evaluated in
# one local process. (the flags, the lines tfhp prints about them)
EVAL_LINES = [
    ('--staged_vars --eval', ["tfhp: --staged_vars stages the training step's reads of the "
                              "variables; --eval takes no training step: no effect"]),
    ('--staged_vars --cross_replica_sync=false --eval',
     ["tfhp: --staged_vars stages the training step's reads of the variables; --eval takes no "
      "training step: no effect",
      'tfhp: --cross_replica_sync=false makes training steps asynchronous; --eval takes no '
      'training step: no effect']),
    ('--variable_update=distributed_all_reduce --all_reduce_spec=pscpu:2k:xring --eval',
     ['tfhp: --variable_update=distributed_all_reduce needs a cluster; in one process its '
      'checkpoint is evaluated as --variable_update=replicated']),
    ('--variable_update=distributed_replicated --eval',
     ['tfhp: --variable_update=distributed_replicated needs a cluster; in one process its '
      'checkpoint is evaluated as --variable_update=replicated']),
]


def test_a_distributed_runs_evaluation_lines_run_in_one_process(tmp_path, capsys):
    common = ['--model=lenet', '--image_size=28', '--batch_size=2', '--train_dir=%s' % tmp_path]
    _assert_result_line(*_in_process(common + ['--num_batches=2', '--num_warmup_batches=1'],
                                     capsys))
    evaluation = common + ['--eval_batch_size=2', '--num_eval_batches=2']
    status, plain, err = _in_process(evaluation + ['--eval'], capsys)
    _assert_result_line(status, plain, err)
    accuracy = re.findall(r'^Accuracy @ 1 = .*$', plain, re.M)
    assert len(accuracy) == 1 and not plain.startswith('tfhp:')
    for line, said in EVAL_LINES:
        status, out, err = _in_process(evaluation + line.split(), capsys)
        _assert_result_line(status, out, err)
        assert out.splitlines()[:len(said)] == said
        # The same checkpoint, the same batches: what a plain --eval of it scores.
        assert re.findall(r'^Accuracy @ 1 = .*$', out, re.M) == accuracy, line


# The lines run as `python -m tfhp`: (the line, the flags appended here).
SUBPROCESS = {
    # TensorFlow's "optimizing for CPU" guide (its --data_dir dropped: synthetic data).
    'intel': ('--device=cpu --mkl=True --kmp_blocktime=0 --nodistortions --model=resnet50 '
              '--data_format=NHWC --batch_size=32 --num_inter_threads=1 '
              '--num_intra_threads=2', TINY),
    'xla': ('--model=lenet --xla_compile=True --num_gpus=1', ['--image_size=8'] + TINY[1:]),
}


@pytest.fixture(scope='module', autouse=True)
def started(request, tmp_path_factory):
    """The SUBPROCESS lines, those this run's tests read started with this module's first test:
    each process is mostly TensorFlow's import and the net's graph on one core, which the other
    core runs beside the lines run in this process (`testing.Started`, `testing.selected`)."""
    commands = {name: [sys.executable, '-m', 'tfhp'] + flags.split() + appended
                for name, (flags, appended) in SUBPROCESS.items()}
    processes = testing.Started(commands, tmp_path_factory.mktemp('lines'),
                                ahead=testing.selected(request))
    yield processes
    processes.end()


def _subprocess(started, name):
    """(exit status, stdout, stderr) of SUBPROCESS line `name`."""
    return started.result(name, 300)[:3]


@testing.reads('intel')
def test_intel_cpu_guide_line(started):
    _assert_result_line(*_subprocess(started, 'intel'))


@testing.reads('xla')
def test_xla_compile_line_runs_or_is_refused_by_the_probe(started):
    status, out, err = _subprocess(started, 'xla')
    if devices.supports_xla_compile('cpu'):
        _assert_result_line(status, out, err)
    else:
        assert status == 2 and err.startswith('tfhp: error: --xla_compile: ')


@pytest.mark.parametrize('line, flag', [
    ('--model=resnet50 --variable_update=replicated --all_reduce_spec=nccl --num_gpus=2',
     '--all_reduce_spec=nccl'),
    ('--model=resnet50 --variable_update=replicated --variable_consistency=relaxed',
     '--variable_consistency=relaxed'),
    ('--model=resnet50 --data_dir=/no/such/dir --use_datasets --batch_group_size=4',
     '--batch_group_size=4'),
])
def test_lines_that_cannot_work_here_exit_2_naming_the_flag(line, flag, capsys):
    status, out, err = _in_process(line.split(), capsys)
    assert status == 2 and flag in err and len(err.splitlines()) == 1
    assert 'Model:' not in out

"""The chunked ps transfers (--ps_transfer): each variable, or chunk of a large one, is pushed,
applied and pulled back on its own, in the step or (background) in a thread of the worker's, and
(priority) pushed from threads of its own, or (pull_clocked, the default) each push paced by a
pull; the training is the same as the whole step's."""
import collections

import pytest
import tensorflow.compat.v1 as tf
from google.protobuf import text_format
from tensorflow.core.framework import graph_pb2

from tests.cluster import jobs

pytestmark = [pytest.mark.cluster, pytest.mark.slow]
# null_dense: one 16 MiB vector, zero-initialised, so that its chunks start as the whole does.
NULL_DENSE = ['--model=null_dense', '--weight_decay=0', '--variable_update=distributed_replicated',
              '--num_batches=4', '--num_warmup_batches=1', '--display_every=100']


# name: the job's flags beyond NULL_DENSE.
RUNS = {
    'whole': ['--ps_transfer=whole_step'],
    # 4 MiB chunks: the vector travels as 4 masters spread over the 2 ps tasks.
    'pipelined': ['--ps_transfer=pipelined', '--ps_chunk_bytes=%d' % (4 << 20)],
    'background': ['--ps_transfer=background', '--ps_chunk_bytes=%d' % (4 << 20)],
    # Priority pushes, two senders (an 8 MiB window) to each ps task.
    'priority': ['--ps_transfer=priority', '--ps_chunk_bytes=%d' % (4 << 20),
                 '--ps_window_bytes=%d' % (8 << 20)],
    # The same with each ps task's two chunks pushed together (--ps_group_bytes).
    'grouped': ['--ps_transfer=priority', '--ps_chunk_bytes=%d' % (4 << 20),
                '--ps_window_bytes=%d' % (8 << 20), '--ps_group_bytes=%d' % (8 << 20)],
    # Pull-clocked, 1 MiB chunks: eight on each ps task's chain, so six wait for pulls; its
    # partition graphs are read by the transfer count test.
    'clocked': ['--ps_transfer=pull_clocked', '--ps_chunk_bytes=%d' % (1 << 20),
                '--partitioned_graph_file_prefix={dir}/w{task}.pbtxt'],
    # The default: pull-clocked, 256 KiB chunks, 32 on each ps task's chain.
    'default': [],
}


def _run(directory, args):
    args = [a.replace('{dir}', str(directory)) for a in args]
    status, summary, output = jobs.launch_job(directory, 2, 2, *(NULL_DENSE + args))
    assert status == 0 and set(summary['exit_codes'].values()) == {0}, output[-3000:]
    return summary


@pytest.fixture(scope='module')
def runs(tmp_path_factory):
    """{name: (summary, folder)} of every job of RUNS, one after another (four at a time cost
    more CPU than they saved where the suite's two workers keep both cores busy)."""
    folders = {name: tmp_path_factory.mktemp(name) for name in RUNS}
    return {name: (_run(folders[name], args), folders[name]) for name, args in RUNS.items()}


def test_every_chunked_transfer_trains_as_the_whole_step_does(runs):
    summaries = {name: summary for name, (summary, _) in runs.items()}
    for summary in summaries.values():
        assert [t['global_step'] for t in summary['tasks']] == [5, 5]
        assert summary['dropped_gradients'] == 0
    sums = [t['variables_checksum'] for s in summaries.values() for t in s['tasks']]
    assert sums[0] != 0 and max(sums) - min(sums) <= 1e-5 * abs(sums[0])
    for name in ('pipelined', 'default'):  # each ps task holds half the vector
        loads = summaries[name]['tasks'][0]['variable_bytes_by_device']
        assert sorted(loads.values()) == [8 << 20, 8 << 20]


def _recvs_by_sender(path):
    """{sending job: the _Recv ops} of one partition graph written by the runtime."""
    graph = graph_pb2.GraphDef()
    text_format.Parse(path.read_text(), graph)
    senders = collections.defaultdict(list)
    for node in graph.node:
        if node.op == '_Recv':
            senders[tf.DeviceSpec.from_string(node.attr['send_device'].s.decode()).job].append(
                node)
    return senders


def test_a_pulled_chunk_costs_two_transfers_its_push_and_its_pull(runs):
    # 16 chunks of 1 MiB over 2 ps tasks. Each chunk's token, and its control edge into the
    # worker's copies, were transfers of their own beside the pull: 3 to 4 a chunk.
    _, tmp_path = runs['clocked']
    for task in (0, 1):
        partitions = {p.name.split('_device')[0].split('_job_', 1)[1]: _recvs_by_sender(p)
                      for p in tmp_path.glob('w%d_job_*.pbtxt' % task)}
        to_worker = partitions['worker_replica_0_task_%d' % task]['ps']
        pulls = [n for n in to_worker if n.attr['tensor_type'].type == tf.float32.as_datatype_enum
                 and n.attr['tensor_name'].s.endswith(b'ReadVariableOp')]
        assert len(pulls) == 16
        # Per ps task: the receipt of its chain's first push and its newest token; per step:
        # the global step (is the gradient late?) and the runtime's own control.
        assert len(to_worker) - len(pulls) <= 2 * 2 + 2
        # To the ps tasks: the 16 pushes, and per task the local step and the runtime's control.
        pushes = sum(len(partitions['ps_replica_0_task_%d' % k]['worker']) for k in (0, 1))
        assert 16 <= pushes <= 16 + 3 * 2

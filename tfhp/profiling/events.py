"""One traced step read back: timed ops with their stage, and the cross-device transfers.

Reads a `RunMetadata` captured with FULL_TRACE. Each op's stage comes from its name alone: the
first name-scope component that is a stage name (`tfhp.ops.scopes.STAGES`, or TensorFlow's
`<stage>_<n>` for a scope opened again), so
`tower_1/backward/gradients/tower_1/forward/...` is `backward` and grappler's
`ConstantFolding/aggregate/...` is `aggregate`. Copies are recognised by op type instead
(`MEMCPY*`, `_Send`/`_Recv`, RPC `RecvTensor`): host<->device copies are `copy`, every other
transfer is `communication`; ops under no stage scope are `other`.

TensorFlow's step stats omit `_Send`/`_Recv` (its collector skips transfer nodes), and between
virtual CPU devices a transfer is a buffer hand-off with no copy at all. The transfers are
therefore read from the partition graphs (`output_partition_graphs=True`), one per
cross-device edge, with the bytes of the tensor and a window from the producer's end to the
first consumer's start: an upper bound on the transfer time where the copy itself is not traced.
"""
import collections
import re

from tfhp.ops import scopes

COPY = 'copy'                    # host <-> device memory copies
COMMUNICATION = 'communication'  # device <-> device and cross-task transfers
OTHER = 'other'                  # ops under no stage scope (variable handles, NoOps, ...)
TRANSFER_STAGES = (COPY, COMMUNICATION)

Op = collections.namedtuple('Op', [
    'name',       # node name (for GPU kernels, the op that launched them)
    'type',       # op type, e.g. 'MatMul', or 'MEMCPYHtoD'
    'device',     # short device name, e.g. 'CPU:0', 'GPU:0/stream:7'
    'start',      # microseconds since the step's first op started
    'end',
    'inputs',     # names of the ops this one read from (control inputs included)
    'stage',      # a stage of scopes.STAGES, COPY, COMMUNICATION or OTHER
    'gpu_trace',  # True for events of a GPU stream or memcpy engine (not executor records)
    'output_bytes',  # {output slot: bytes}
])

Transfer = collections.namedtuple('Transfer', [
    'tensor',  # 'producer:slot'
    'src',     # short device names
    'dst',
    'bytes',   # 0 when the producer's output size was not recorded
    'start',   # producer's end, or None if the producer was not traced
    'end',     # first consumer's start, or None if no consumer was traced
])

Trace = collections.namedtuple('Trace', ['ops', 'transfers'])

_DEVICE = re.compile(r'^/job:([^/]+)/replica:\d+/task:(\d+)/device:(.+)$')
_LABEL = re.compile(r'^(.*) = (.*)\((.*)\)$')
_SEND_OPS = ('_Send', '_HostSend')
_RECV_OPS = ('_Recv', '_HostRecv')
_TRANSFER_TYPES = _SEND_OPS + _RECV_OPS + ('RecvTensor',)


def short_device(device):
    """'/job:localhost/replica:0/task:0/device:CPU:0' -> 'CPU:0'; other jobs keep 'job:task/'."""
    match = _DEVICE.match(device)
    if not match:
        return device
    job, task, rest = match.groups()
    return rest if job == 'localhost' else '%s:%s/%s' % (job, task, rest)


def is_gpu_trace_device(device):
    """Whether a step-stats device holds GPU tracer events (streams, memcpy engine)."""
    return '/stream:' in device or '/memcpy' in device


def stage_of(name, op_type, stages=scopes.STAGES):
    """The stage of an op: a transfer kind by type, else its first stage-named scope.

    A stage's scope opened twice in one graph is named `<stage>_<n>` by TensorFlow (the
    collective manager's between graphs is `aggregate_1`): it is the same stage."""
    if 'MEMCPY' in op_type:
        return COPY if ('HtoD' in op_type or 'DtoH' in op_type) else COMMUNICATION
    if op_type in _TRANSFER_TYPES:
        return COMMUNICATION
    for part in name.split('/'):
        base, _, suffix = part.rpartition('_')
        stage = base if base and suffix.isdigit() else part
        if stage in stages:
            return stage
    return OTHER


def _producer(tensor):
    """'^name' or 'name:1' -> 'name'."""
    return tensor.lstrip('^').split(':')[0]


def _kernel_name_and_type(node_stats):
    """A GPU tracer event's launching op and type ('name:Op', or '@@name:Op#' in the label)."""
    label = node_stats.timeline_label
    start, end = label.find('@@'), label.find('#')
    name = label[start + 2:end] if 0 <= start < end - 2 else node_stats.node_name
    if 'MEMCPY' in label and 'MEMCPY' not in name:
        return name.split(':')[0], label.split()[0]
    fields = name.split(':') + ['unknown']
    return fields[0], fields[1]


def _nanos(node_stats):
    """(start, end) in integer nanoseconds, from the nanosecond fields where TF filled them in."""
    if node_stats.all_start_nanos:
        return (node_stats.all_start_nanos,
                node_stats.all_start_nanos + node_stats.all_end_rel_nanos)
    start = node_stats.all_start_micros * 1000
    return start, start + node_stats.all_end_rel_micros * 1000


def _devices_to_read(step_stats):
    """Every device, except a GPU's 'stream:all' when its single streams are also present."""
    names = [d.device for d in step_stats.dev_stats]
    streams = {n.rsplit('/stream:', 1)[0] for n in names
               if '/stream:' in n and not n.endswith('/stream:all')}
    return [d for d in step_stats.dev_stats
            if not (d.device.endswith('/stream:all') and d.device[:-len('/stream:all')] in streams)]


def _edges(partition_graphs):
    """{recv node name: (tensor, src, dst)} for every cross-device edge of the partitions."""
    sent, received = {}, {}
    for graph in partition_graphs:
        for node in graph.node:
            if node.op not in _SEND_OPS + _RECV_OPS or (
                    'client_terminated' in node.attr and node.attr['client_terminated'].b):
                continue  # not a transfer, or a feed or fetch rather than an edge
            key = node.attr['tensor_name'].s
            if node.op in _SEND_OPS:
                sent[key] = node.input[0]
            elif node.op in _RECV_OPS:
                received[key] = (node.name, short_device(node.attr['send_device'].s.decode()),
                                 short_device(node.attr['recv_device'].s.decode()))
    return {name: (sent[key], src, dst) for key, (name, src, dst) in received.items()
            if key in sent}


def _graph_inputs(partition_graphs):
    """{node name: raw input names} from the partition graphs (control inputs included)."""
    return {node.name: [_producer(i) for i in node.input]
            for graph in partition_graphs for node in graph.node}


def _label_inputs(label):
    """Data inputs named in a timeline label 'name = Op(a, b:1)' (labels omit control inputs)."""
    match = _LABEL.match(label)
    return [_producer(i) for i in match.group(3).split(', ') if i] if match else []


def parse(run_metadata, stages=scopes.STAGES):
    """Reads the timed ops and transfers of one traced step.

    Args:
      run_metadata: a `RunMetadata` from a FULL_TRACE run; with its partition graphs
        (`output_partition_graphs=True`, as `tfhp.session.run_traced` asks) the transfers and
        control dependencies are known too, without them only data inputs from op labels.
      stages: stage names recognised in op names.
    Returns:
      A `Trace`: ops sorted by start time, and the transfers.
    """
    edges = _edges(run_metadata.partition_graphs)
    graph_inputs = _graph_inputs(run_metadata.partition_graphs)
    devices = _devices_to_read(run_metadata.step_stats)
    # Times are kept relative to the first op: microseconds since the epoch as floats would
    # round to a quarter of a microsecond.
    origin = min((_nanos(s)[0] for d in devices for s in d.node_stats), default=0)
    ops, consumer_starts = [], collections.defaultdict(list)
    for dev_stats in devices:
        gpu_trace = is_gpu_trace_device(dev_stats.device)
        device = short_device(dev_stats.device)
        for node_stats in dev_stats.node_stats:
            start, end = ((t - origin) / 1e3 for t in _nanos(node_stats))
            inputs = ()
            if gpu_trace:
                name, op_type = _kernel_name_and_type(node_stats)
            else:
                name = node_stats.node_name
                match = _LABEL.match(node_stats.timeline_label)
                op_type = match.group(2) if match else 'unknown'
                raw = graph_inputs.get(name) or _label_inputs(node_stats.timeline_label)
                for producer in raw:
                    consumer_starts[producer].append(start)
                # A received tensor is read from the op that sent it (its edge's producer).
                inputs = tuple(_producer(edges[p][0]) if p in edges else p for p in raw)
            output_bytes = {o.slot: o.tensor_description.allocation_description.requested_bytes
                            for o in node_stats.output}
            ops.append(Op(name, op_type, device, start, end, inputs,
                          stage_of(name, op_type, stages), gpu_trace, output_bytes))
    ops.sort(key=lambda op: (op.start, op.end))
    return Trace(ops, _transfers(ops, edges, consumer_starts))


def _transfers(ops, edges, consumer_starts):
    executed = {op.name: op for op in ops if not op.gpu_trace}
    transfers = []
    for recv, (tensor, src, dst) in sorted(edges.items()):
        name, _, slot = tensor.partition(':')
        producer = executed.get(name)
        num_bytes = producer.output_bytes.get(int(slot or 0), 0) if producer else 0
        starts = consumer_starts.get(recv)
        transfers.append(Transfer(tensor, src, dst, num_bytes,
                                  producer.end if producer else None,
                                  min(starts) if starts else None))
    return transfers

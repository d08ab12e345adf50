"""Every flag of the `tfhp` command, defined in its --help groups.

Only definitions: `tfhp.cli` reads them into a BenchmarkConfig. docs/flags.md lists each, in
the same groups (tests/cli_test.py, tests/docs_test.py).
"""
from absl import flags

from tfhp import compression
from tfhp import config as config_lib
from tfhp import modes

FLAGS = flags.FLAGS

HELP_GROUPS = []  # (title, how many of this module's flags come before its first), for --help
CLUSTER_RESOLVERS = ('auto', 'flags', 'tf_config', 'slurm')


def _group(title):
    """Starts a group of --help: the flags defined from here to the next group. docs/flags.md
    groups its tables the same way (tests/cli_test.py)."""
    HELP_GROUPS.append((title, len(FLAGS.get_flags_for_module(__name__))))


_group('Model')
flags.DEFINE_string('model', 'trivial', 'Model name (docs/training.md lists them).')
flags.DEFINE_integer('batch_size', None, 'Batch size per device; default: the model\'s.')
flags.DEFINE_integer('image_size', None, 'Square input image size; default: the model\'s.')
flags.DEFINE_string('emulated_compute', '', 'A compute profile (python -m tfhp.calibrate): build '
                    'the model\'s variables and wait each layer\'s time instead of computing '
                    'it, so a job measures the cluster, not the cores.')
flags.DEFINE_integer('num_classes', 1000, 'Number of classes of synthetic data standing in '
                     'for ImageNet (for CIFAR-10, --data_name=cifar10: 10).')
flags.DEFINE_enum('data_format', 'NHWC', config_lib.DATA_FORMATS, 'Image layout.')
flags.DEFINE_boolean('fuse_batchnorm', True,
                     'Fused batch-norm kernel (true) or composite ops (false).')
flags.DEFINE_integer('layer_slice_bytes', 0, 'Build each dense layer whose weights take more '
                     'bytes as column slices of at most this many, each its own variable and '
                     'matmul, so each slice\'s gradient can leave while the others compute '
                     '(P3\'s parameter slicing); 0: never.')
_group('Optimizer and learning rate')
flags.DEFINE_enum('optimizer', 'sgd', config_lib.OPTIMIZERS, 'Optimizer.')
flags.DEFINE_float('learning_rate', None, 'Base learning rate; default: the model\'s.')
flags.DEFINE_alias('init_learning_rate', 'learning_rate')
flags.DEFINE_float('momentum', 0.9, 'Momentum for momentum and rmsprop.')
flags.DEFINE_float('rmsprop_decay', 0.9, 'RMSProp decay.')
flags.DEFINE_float('rmsprop_epsilon', 1.0, 'RMSProp epsilon.')
flags.DEFINE_float('adam_beta1', 0.9, 'Adam beta1.')
flags.DEFINE_float('adam_beta2', 0.999, 'Adam beta2.')
flags.DEFINE_float('adam_epsilon', 1e-8, 'Adam epsilon.')
flags.DEFINE_float('weight_decay', 4e-5, 'L2 weight decay (weights only).')
flags.DEFINE_float('gradient_clip', None, 'Clip each gradient to [-clip, clip].')
flags.DEFINE_string('piecewise_learning_rate_schedule', '',
                    '"r0;e1;r1;e2;r2": rate r0 until epoch e1, then r1, ...')
flags.DEFINE_float('num_epochs_per_decay', 0.0, 'Multiply the rate by '
                   '--learning_rate_decay_factor every this many epochs; 0: no decay.')
flags.DEFINE_float('learning_rate_decay_factor', 0.0, 'See --num_epochs_per_decay.')
flags.DEFINE_float('minimum_learning_rate', 0.0, 'The decayed rate never goes below this.')
flags.DEFINE_float('num_learning_rate_warmup_epochs', 0.0,
                   'Linear learning-rate warm-up from 0 over this many epochs.')
flags.DEFINE_integer('learning_rate_base_batch_size', 0,
                     'If > 0, linear scaling rule: rate *= global batch / this.')
flags.DEFINE_float('resnet_base_lr', None, 'ResNets: the default rate at 256 images per '
                   'device (rate = this * batch / 256).')
_group('Devices and threads')
flags.DEFINE_enum('device', 'cpu', config_lib.DEVICES, 'Device kind of the towers.')
flags.DEFINE_integer('num_devices', 1, 'Towers in this process (virtual devices on CPU).')
flags.DEFINE_alias('num_gpus', 'num_devices')
flags.DEFINE_enum('local_parameter_device', 'cpu', config_lib.DEVICES,
                  'Where parameter-server variables live in this process.')
flags.DEFINE_integer('num_intra_threads', 0, 'Intra-op thread pool size (0: TF decides).')
flags.DEFINE_integer('num_inter_threads', 0, 'Inter-op thread pool size (0: TF decides; on the '
                     'RecordInput path two per core).')
flags.DEFINE_boolean('mkl', False, 'Export the Intel OpenMP settings (--kmp_*) before '
                     'TensorFlow starts.')
flags.DEFINE_integer('kmp_blocktime', config_lib.KMP_DEFAULTS['kmp_blocktime'],
                     'KMP_BLOCKTIME (with --mkl).')
flags.DEFINE_integer('kmp_settings', config_lib.KMP_DEFAULTS['kmp_settings'],
                     'KMP_SETTINGS (with --mkl).')
flags.DEFINE_string('kmp_affinity', config_lib.KMP_DEFAULTS['kmp_affinity'],
                    'KMP_AFFINITY (with --mkl).')
_group('Replication')
flags.DEFINE_enum('variable_update', 'parameter_server', config_lib.VARIABLE_UPDATES,
                  'How variables are placed and gradients aggregated.')
# In-graph replication (tfhp.replication, tfhp.ops.allreduce): tf_cnn_benchmarks' names.
flags.DEFINE_string('all_reduce_spec', '', 'All-reduce algorithm(s) for replicated: pscpu, '
                    'psgpu, xring, nccl, collective, alg#shards, alg/alg, alg:limit:alg.')
flags.DEFINE_boolean('hierarchical_copy', False, 'All-reduce within two halves of the towers, '
                     'then across them.')
flags.DEFINE_integer('gradient_repacking', 0, 'If > 0, concatenate all gradients into this '
                     'many packs before the all-reduce.')
flags.DEFINE_integer('agg_small_grads_max_bytes', 0, 'If > 0, pack runs of gradients of at '
                     'most this many bytes before the all-reduce.')
flags.DEFINE_integer('agg_small_grads_max_group', 10, 'Most gradients in one small-gradient '
                     'pack.')
flags.DEFINE_integer('fusion_bucket_bytes', 0, 'If > 0, fuse gradients, last layer first, '
                     'into buckets of at most this many bytes, each all-reduced as soon as its '
                     'gradients exist (replicated, collective_all_reduce).')
flags.DEFINE_integer('collective_subdivs', None, 'The workers\' collective all-reduce ring '
                     'splits each worker\'s share of a tensor into at most this many chunks in '
                     'flight (default: %d, the measured best; 0: TensorFlow\'s choice, chunks of '
                     'at most 4 MB).' % config_lib.DEFAULT_RING_SUBDIVS)
flags.DEFINE_enum('gradient_transfer_dtype', 'float32', config_lib.TRANSFER_DTYPES,
                  'Cast gradients to this dtype for the all-reduce, or for sending them '
                  'between tasks (the 16-bit schemes of --gradient_compression).')
flags.DEFINE_enum('gradient_compression', compression.NONE, compression.names(),
                  'Compress gradients with this scheme (tfhp.compression) for the all-reduce, '
                  'or for sending them between tasks.')
flags.DEFINE_float('compression_fraction', None, 'The share of each gradient\'s elements a '
                   'sparse --gradient_compression or --downlink_compression (topk, topk_noef, '
                   'randomk) sends, in (0, 1] (default: 0.01).')
flags.DEFINE_float('momentum_correction', 0.0, 'The senders\' momentum for compressed '
                   'gradients, in [0, 1) (deep gradient compression\'s momentum correction): '
                   'each sender compresses its velocity, and the update is plain SGD '
                   '(--optimizer=sgd). 0: off.')
flags.DEFINE_enum('downlink_compression', compression.NONE, compression.names(),
                  'distributed_replicated: the variables come back to the workers as deltas '
                  'compressed with this scheme (tfhp.replication.downlink); synchronous, '
                  'every worker in each step.')
flags.DEFINE_boolean('staged_vars', False, 'parameter_server: read variables through staging '
                     'areas (weights one step old).')
flags.DEFINE_enum('variable_consistency', 'strong', config_lib.VARIABLE_CONSISTENCIES,
                  'relaxed: weights read one update behind (parameter_server\'s staged reads).')
_group('Precision')
# tfhp.runner.loss_scale, tfhp.models.layers: tf_cnn_benchmarks' float16 flags, bfloat16.
flags.DEFINE_boolean('use_fp16', False, 'Compute in float16 (float32 master variables).')
flags.DEFINE_enum('compute_dtype', 'float32', config_lib.COMPUTE_DTYPES,
                  'The dtype towers compute in (float32 master variables).')
flags.DEFINE_float('fp16_loss_scale', None, 'float16: loss scale (default 128; 1: none).')
flags.DEFINE_boolean('fp16_enable_auto_loss_scale', False, 'float16: adjust the loss scale '
                     'from the gradients; skip steps whose gradients are not finite.')
flags.DEFINE_integer('fp16_inc_loss_scale_every_n', 1000, 'float16, automatic scale: double '
                     'it after this many finite steps in a row.')
flags.DEFINE_boolean('fp16_vars', False, 'float16: store the variables in float16 too.')
flags.DEFINE_boolean('compact_gradient_transfer', True, 'float16: all-reduce gradients in '
                     'float16.')
_group('XLA')
flags.DEFINE_boolean('xla_compile', False, 'Compile each tower\'s forward and backward pass '
                     'with XLA.')
flags.DEFINE_boolean('xla', False, 'XLA auto-clustering (the session\'s global JIT level).')
_group('Run (steps, checkpoints, evaluation, results)')
flags.DEFINE_integer('num_batches', 100, 'Timed steps.')
flags.DEFINE_float('num_epochs', None, 'Train this many epochs instead of --num_batches, '
                   'counting every training step: the warm-up\'s, then the timed ones.')
flags.DEFINE_integer('num_warmup_batches', 10, 'Untimed steps before timing.')
flags.DEFINE_integer('display_every', 10, 'Print progress every this many steps.')
flags.DEFINE_integer('tf_random_seed', 1234, 'Seed of every random op.')
flags.DEFINE_boolean('deterministic', False, 'Two runs of one seed and the same flags compute '
                     'the same losses: input read and augmented in an order the seed fixes '
                     '(slower), TensorFlow\'s op determinism on. Not between graphs with '
                     'spares or asynchronous updates (the run says so).')
flags.DEFINE_string('train_dir', None, 'Checkpoint directory; a run resumes from it.')
flags.DEFINE_integer('save_model_steps', None, 'Also checkpoint every this many steps.')
flags.DEFINE_integer('target_global_step', 0, 'Synchronous between-graph workers end at this '
                     'global step, however often the job was restarted from a checkpoint (0: '
                     'the step the chief started from + warm-up + --num_batches).')
flags.DEFINE_string('progress_file', None, 'The chief appends "global_step loss" here after '
                    'every step (tfhp.launch --max_restarts reads how far a failed job got).')
flags.DEFINE_boolean('eval', False, 'Evaluate the checkpoint in --train_dir (top-1/top-5).')
flags.DEFINE_boolean('forward_only', False, 'Time inference: the forward pass alone.')
flags.DEFINE_integer('eval_during_training_every_n_steps', None, 'Evaluate every this many '
                     'training steps.')
flags.DEFINE_float('eval_during_training_every_n_epochs', None, 'Evaluate every this many '
                   'training epochs.')
flags.DEFINE_integer('num_eval_batches', None, 'Evaluation steps (default: --num_batches).')
flags.DEFINE_integer('eval_batch_size', None, 'Evaluation batch per device (default: '
                     '--batch_size).')
flags.DEFINE_float('stop_at_top_1_accuracy', None, 'Stop training once an evaluation reaches '
                   'this top-1 accuracy.')
flags.DEFINE_boolean('print_training_accuracy', False, 'Print training top-1/top-5.')
flags.DEFINE_string('result_file', None, 'Append one JSON line per run to this file.')
flags.DEFINE_integer('max_ckpts_to_keep', 3, 'Checkpoints kept in --train_dir; 0 keeps all.')
_group('Profiling and summaries')
# tfhp.profiling: one traced step, TensorBoard summaries.
flags.DEFINE_string('trace_file', None, 'Write a Chrome trace of one training step here (and '
                    'its RunMetadata, for `python -m tfhp.trace`, beside it).')
flags.DEFINE_integer('trace_step', 1, 'Trace before this timed step (an extra, untimed step).')
flags.DEFINE_boolean('trace_memory', False, 'Show tensor memory in the Chrome trace.')
flags.DEFINE_boolean('use_chrome_trace_format', True, 'false: --trace_file gets the step\'s '
                     'StepStats (text proto) instead of a Chrome trace.')
flags.DEFINE_string('tfprof_file', None, 'Profile %d extra steps with tfprof; write its '
                    'ProfileProto here.' % config_lib.PROFILED_STEPS)
flags.DEFINE_string('graph_file', None, 'Write the GraphDef here (text if the name ends in '
                    'txt).')
flags.DEFINE_string('partitioned_graph_file_prefix', None, 'Write each device\'s partitioned '
                    'graph to <prefix><device>.')
flags.DEFINE_integer('summary_verbosity', 1, '0 none, 1 loss/learning rate/images per sec, '
                     '2 also gradient norms, 3 also gradient histograms.')
flags.DEFINE_integer('save_summaries_steps', 0, 'Write summaries to --train_dir every this '
                     'many steps; 0: none.')
_group('Input pipeline')
# tfhp.pipelines, tfhp.data: real data, RecordInput or tf.data, staging.
flags.DEFINE_string('data_dir', None, 'Directory of TFRecord shards in the ImageNet format '
                    '(train-*-of-*, validation-*-of-*); default: synthetic data.')
flags.DEFINE_string('data_name', None, 'Expected data set name: imagenet, or the name in '
                    '--data_dir\'s dataset_info.json. Default: what --data_dir holds. Without '
                    '--data_dir: imagenet or cifar10, the data synthetic data stands in for. '
                    'cifar10 selects the CIFAR-10 models (32x32) and preprocessing.')
flags.DEFINE_boolean('use_datasets', False, 'Read through tf.data instead of RecordInput.')
flags.DEFINE_integer('datasets_num_private_threads', 0,
                     'tf.data private thread pool size; 0: the shared pool.')
flags.DEFINE_integer('datasets_prefetch_buffer_size', 1, 'Batches tf.data prefetches.')
flags.DEFINE_boolean('datasets_use_caching', False, 'tf.data keeps the encoded records in '
                     'memory after the first epoch.')
flags.DEFINE_boolean('datasets_repeat_cached_sample', False, 'tf.data repeats one record '
                     'forever (input at memory speed).')
flags.DEFINE_integer('record_input_parallelism', 16, 'RecordInput reader threads.')
flags.DEFINE_integer('record_input_buffer_size', 10000, 'RecordInput shuffle buffer (records).')
flags.DEFINE_float('record_input_shift_ratio', 0.0, 'Fraction of the file list RecordInput '
                   'readers skip at the start (workers: task / num_workers).')
flags.DEFINE_boolean('distortions', False, 'Optional training distortions: colour '
                     '(ImageNet-format data), pad-4 crop and flip (CIFAR-10).')
flags.DEFINE_boolean('random_crop_flip', True, 'ImageNet-format training images: random '
                     'crop and flip; false: the whole image.')
flags.DEFINE_boolean('staged_input', True, 'Software-pipeline input and compute through '
                     'staging areas; false: read, preprocess, compute in sequence.')
flags.DEFINE_boolean('skip_corrupt_records', False, 'Skip and count records that do not parse '
                     'or decode instead of failing.')
flags.DEFINE_boolean('input_only', False, 'Time the input pipeline alone, without a model.')
flags.DEFINE_enum('image_dtype', 'float32', config_lib.IMAGE_DTYPES, 'Dtype of the images '
                  'staged onto the devices; the model casts them to its compute dtype.')
flags.DEFINE_integer('batch_group_size', 1, 'tf_cnn_benchmarks\' batches per input '
                     'producer run: RecordInput reads and preprocesses this many steps\' '
                     'batches at once, every so many steps (synthetic data ignores it).')
_group('Cluster')
# tfhp.cluster: this process as one task of a multi-process job, described by the flags below,
# TF_CONFIG (as cluster managers set it) or Slurm's environment (--cluster_resolver).
flags.DEFINE_enum('cluster_resolver', 'auto', CLUSTER_RESOLVERS, 'Where this task finds its '
                  'cluster: flags (--job_name, ...), tf_config (TF_CONFIG), slurm (srun\'s '
                  'SLURM_* variables); auto: the flags if --job_name is given, else TF_CONFIG '
                  'if set, else one process.')
# slurm_num_ps, not num_ps: the launcher's --num_ps starts ps tasks; this one names some of srun's.
flags.DEFINE_integer('slurm_num_ps', 1, '--cluster_resolver=slurm: the first this many Slurm '
                     'tasks (ranks) are ps tasks, the rest workers.')
flags.DEFINE_integer('slurm_port_base', 8888, '--cluster_resolver=slurm: the port of the '
                     'first task on each node; the node\'s next tasks take the next ports.')
flags.DEFINE_enum('job_name', '', ('',) + config_lib.JOB_NAMES,
                  'This task\'s job: ps, worker or controller; empty: one process.')
flags.DEFINE_integer('task_index', 0, 'This task\'s index in its job.')
flags.DEFINE_list('ps_hosts', [], 'Comma-separated host:port of the ps tasks.')
flags.DEFINE_list('worker_hosts', [], 'Comma-separated host:port of the worker tasks.')
flags.DEFINE_string('controller_host', '', 'host:port of the in-graph client, if not worker 0.')
flags.DEFINE_enum('graph_mode', 'between_graph', config_lib.GRAPH_MODES,
                  'A graph per worker, or one client building towers on every worker '
                  '(distributed_all_reduce implies in_graph).')
flags.DEFINE_boolean('cross_replica_sync', True,
                     'Synchronous steps; false: every worker (or replica) applies alone.')
flags.DEFINE_integer('replicas_to_aggregate', None, 'Gradients per synchronous step; fewer '
                     'than the workers leaves spare replicas. Default: every worker.')
flags.DEFINE_list('straggler_workers', [], 'Worker indices slowed by --straggler_delay_ms '
                  'every step (experiments).')
flags.DEFINE_float('straggler_delay_ms', 0.0, 'Injected delay per step on --straggler_workers.')
flags.DEFINE_enum('straggler_mode', 'compute', config_lib.STRAGGLER_MODES, 'compute: a delay op '
                  'inside the step, after the variables are read; before_step: a sleep before '
                  'the step.')
flags.DEFINE_float('peer_timeout_s', 60.0, 'Bound on waiting for a peer task or the chief\'s '
                   'initialisation.')
flags.DEFINE_float('step_timeout_s', 600.0, 'Bound on one distributed step.')
flags.DEFINE_float('save_model_secs', None, 'Distributed: the chief also checkpoints every '
                   'this many seconds.')
flags.DEFINE_integer('partition_min_bytes', 0, 'Split parameter-server variables of at least '
                     'this many bytes over the ps tasks; 0: never.')
flags.DEFINE_enum('ps_transfer', None, list(modes.TRANSFERS), 'How the synchronous '
                  'between-graph workers of %s reach the ps tasks (docs/distributed.md); '
                  'default: the strategy\'s own (%s).' % (
                      ' and '.join(modes.names(lambda s: s.ps_transfer)), ', '.join(
                          '%s: %s' % (s.name, s.ps_transfer) for s in modes.STRATEGIES.values()
                          if s.ps_transfer)))
flags.DEFINE_integer('ps_chunk_bytes', 0, 'A chunked --ps_transfer cuts variables over this '
                     'many bytes into chunks of at most this size (0: %d).'
                     % modes.DEFAULT_CHUNK_BYTES)
flags.DEFINE_integer('ps_window_bytes', 0, 'A --ps_transfer with a window (%s): bytes of '
                     'gradients a worker may have on the way to each ps task at once (0: one '
                     'push at a time).' % ', '.join(modes.names(lambda t: t.window,
                                                                modes.TRANSFERS)))
flags.DEFINE_integer('ps_group_bytes', 0, 'A --ps_transfer with groups (%s): consecutive '
                     'gradients of a ps task each under this many bytes are pushed together, '
                     'in groups of at most this many (0: each alone).'
                     % ', '.join(modes.names(lambda t: t.groups, modes.TRANSFERS)))
flags.DEFINE_float('linger_s', 0.0, 'A serving task serves this many seconds more after its '
                   'workers are done, or until a client releases it (python -m tfhp.reconnect), '
                   'so a client can read or save the variables it holds; 0: exit at once.')
flags.DEFINE_boolean('serve_clients', False, 'A ps task serves clients in containers '
                     '(--container), not the job\'s workers: it waits for none and serves until '
                     '--linger_s ends or a client releases it (python -m tfhp.search).')
flags.DEFINE_string('container', '', 'A worker that is a client of its own: its graph in this '
                    'resource container, initialised, trained and evaluated by itself, the '
                    'container reset as it ends (python -m tfhp.search).')
flags.DEFINE_boolean('container_reset', True, 'A client in a container (--container) resets '
                     'it as it ends; false leaves its variables on the ps tasks (tfhp.search '
                     '--no_reset: what the reset saves).')
_group('Gradient staleness')
# tfhp.replication.staleness: always measured in asynchronous training; the remedies apply
# to it (--cross_replica_sync=false).
flags.DEFINE_boolean('measure_staleness', False, 'Also measure gradient staleness in '
                     'synchronous in-graph runs (where it must be 0).')
flags.DEFINE_integer('max_gradient_staleness', None, 'Asynchronous: drop gradients older than '
                     'this many updates.')
flags.DEFINE_boolean('scale_stale_gradients', False, 'Asynchronous: scale each gradient by '
                     '1/staleness.')
flags.DEFINE_integer('async_warmup_steps', 0, 'Asynchronous: the first replica trains alone '
                     'for this many global steps before the others join.')


# Earlier versions' spellings of --ps_transfer and its sizes: still read (docs' command lines
# use them), never listed by --help. `tfhp.cli` turns them into the transfer they named.
OLD_TRANSFER_FLAGS = {'ps_pipeline_bytes': 0, 'ps_pipeline_window': 0,
                      'ps_background_pulls': False, 'ps_push_priority': False,
                      'ps_push_fusion_bytes': 0, 'ps_pull_clock': False}
for _name, _default in OLD_TRANSFER_FLAGS.items():
    (flags.DEFINE_boolean if isinstance(_default, bool) else flags.DEFINE_integer)(
        _name, _default, 'The old spelling of --ps_transfer and its sizes (not listed).')
HIDDEN_FLAGS = tuple(OLD_TRANSFER_FLAGS)

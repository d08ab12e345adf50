"""ReplicationConfig: variable placement and gradient aggregation across towers."""
import dataclasses
from typing import Optional

from tfhp import compression
from tfhp import modes
from tfhp.config import errors
from tfhp.ops import allreduce_spec

VARIABLE_UPDATES = modes.names()
# Need a cluster (tfhp.cluster): variables copied per worker device, or no parameter server at all.
DISTRIBUTED_VARIABLE_UPDATES = modes.names(lambda s: s.needs_cluster)
# Variable updates that all-reduce gradients (the ones --all_reduce_spec and packing apply to).
ALL_REDUCE_UPDATES = modes.names(lambda s: s.tower_all_reduce)
TRANSFER_DTYPES = ('float32', 'float16', 'bfloat16')
VARIABLE_CONSISTENCIES = ('strong', 'relaxed')


# The collective ring's chunks in flight when --collective_subdivs is left out. Perf: 4 took
# the 2-worker ring from 1.52 to 1.23 times the duplex bound and 6 workers from 1.70 to 1.51,
# 4 workers unchanged (null_dense, 1 Gbit/s; docs/results.md, "More chunks in flight on the
# ring", 5556c7a).
DEFAULT_RING_SUBDIVS = 4


@dataclasses.dataclass(frozen=True)
class ReplicationConfig:
    """How variables are placed and gradients aggregated across towers.

    Attributes:
      variable_update: one of VARIABLE_UPDATES (a row of `tfhp.modes.STRATEGIES`).
      all_reduce_spec: all-reduce algorithm(s) for the all-reduce updates, in tf_cnn_benchmarks'
        syntax (`tfhp.ops.allreduce_spec`); '' picks the default (copy to the local parameter
        device, or --hierarchical_copy).
      hierarchical_copy: all-reduce in two groups of towers, then across the groups.
      gradient_repacking: if > 0, concatenate all gradients and cut them into this many packs
        before the all-reduce.
      agg_small_grads_max_bytes: if > 0, concatenate runs of gradients of at most this many
        bytes (at most agg_small_grads_max_group per pack) before the all-reduce.
      agg_small_grads_max_group: see agg_small_grads_max_bytes.
      fusion_bucket_bytes: if > 0, fuse the gradients, last layer first, into buckets of at
        most this many bytes, each all-reduced as soon as its gradients exist
        (`tfhp.ops.packing.buckets`); for the all-reduce updates, in one graph or among
        between-graph workers.
      collective_subdivs: > 0: the ring of the workers' collective all-reduce splits each
        worker's share of a tensor into at most this many chunks in flight
        (CollectiveReduceV2's max_subdivs_per_device); 0: TensorFlow's choice (chunks of at
        most 4 MB); None: DEFAULT_RING_SUBDIVS where the strategy's row has
        worker_all_reduce (`ring_subdivs`).
      gradient_transfer_dtype: cast float32 gradients to this dtype for the all-reduce, or, in
        a between-graph job, for sending them to the ps (or the other workers); the older
        spelling of gradient_compression's 16-bit schemes.
      gradient_compression: the `tfhp.compression` scheme gradients are compressed with for
        the all-reduce or for sending them between tasks ('none': as they are).
      compression_fraction: the share of each gradient's (or downlink delta's) elements a
        sparse scheme (topk, randomk) sends, in (0, 1] (None: the scheme's default, 0.01).
      momentum_correction: the senders' momentum m for compressed gradients, in [0, 1) (0:
        off): each sender compresses its velocity u = m u + g, and the update applies the
        payloads with plain SGD (`tfhp.compression.base`; needs --optimizer=sgd and a
        --gradient_compression).
      downlink_compression: the `tfhp.compression` scheme the variables come back to the
        workers in, as deltas of what they hold ('none': the values themselves;
        `tfhp.replication.downlink`; synchronous steps of a strategy with downlink_deltas,
        every worker in each step).
      staged_vars: parameter_server reads variables through staging areas (one-step-stale
        weights; see tfhp.replication.staged_vars).
      variable_consistency: 'strong' (every step reads the weights of every update before
        it) or 'relaxed' (tf_cnn_benchmarks: every update shows up eventually, likely one step
        behind). tfhp's relaxed mode is the staged reads of --staged_vars, so 'relaxed' needs
        parameter_server.
    """
    variable_update: str = modes.DEFAULT_STRATEGY
    all_reduce_spec: str = ''
    hierarchical_copy: bool = False
    gradient_repacking: int = 0
    agg_small_grads_max_bytes: int = 0
    agg_small_grads_max_group: int = 10
    fusion_bucket_bytes: int = 0
    collective_subdivs: Optional[int] = None
    gradient_transfer_dtype: str = 'float32'
    gradient_compression: str = compression.NONE
    compression_fraction: Optional[float] = None
    momentum_correction: float = 0.0
    downlink_compression: str = compression.NONE
    staged_vars: bool = False
    variable_consistency: str = 'strong'

    def __post_init__(self):
        # The live table: a script may have registered a strategy of its own.
        errors.require_choice(self, 'variable_update', modes.names())
        self._check_all_reduce()
        staged = ', '.join(modes.names(lambda s: s.staged_reads))
        errors.require(not self.staged_vars or self.strategy.staged_reads,
                       '--staged_vars works with --variable_update=%s only, got %r', staged,
                       self.variable_update)
        errors.require_choice(self, 'variable_consistency', VARIABLE_CONSISTENCIES)
        errors.require(self.variable_consistency == 'strong' or self.strategy.staged_reads,
                       '--variable_consistency=relaxed is tfhp\'s staged reads (--staged_vars), '
                       'which need --variable_update=%s, got %r', staged,
                       self.variable_update)

    @property
    def compression(self):
        """The compression scheme's name: --gradient_compression, or the 16-bit cast that
        --gradient_transfer_dtype names ('none' when gradients travel as they are)."""
        if self.gradient_transfer_dtype != 'float32':
            return self.gradient_transfer_dtype
        return self.gradient_compression

    def compressor(self):
        """The `tfhp.compression` Compressor these settings name (None: gradients travel as
        they are); imports TensorFlow."""
        # The fraction may be the downlink's alone (`downlink_compressor`).
        return compression.get(self.compression,
                               compression.fraction_for(self.compression,
                                                        self.compression_fraction),
                               self.momentum_correction)

    def downlink_compressor(self):
        """The `tfhp.compression` Compressor of --downlink_compression (None: the variables
        come down as they are); imports TensorFlow."""
        return compression.get(self.downlink_compression,
                               compression.fraction_for(self.downlink_compression,
                                                        self.compression_fraction))

    @property
    def compression_flag(self):
        """The flag that chose the compression, for messages."""
        if self.gradient_transfer_dtype != 'float32':
            return '--gradient_transfer_dtype'
        return '--gradient_compression'

    @property
    def ring_subdivs(self):
        """The workers' collective ring's chunks in flight (`collective_subdivs`, resolved):
        DEFAULT_RING_SUBDIVS unless given; 0 (TensorFlow's choice) for a strategy without
        the ring."""
        if not self.strategy.worker_all_reduce:
            return 0
        return DEFAULT_RING_SUBDIVS if self.collective_subdivs is None else self.collective_subdivs

    @property
    def strategy(self):
        """The `tfhp.modes.Strategy` of --variable_update: what it supports."""
        return modes.strategy(self.variable_update)

    @property
    def staged_reads(self):
        """Whether parameter-server reads go through staging areas (--staged_vars, or
        --variable_consistency=relaxed): weights one update old."""
        return self.staged_vars or self.variable_consistency == 'relaxed'

    @property
    def staged_reads_flag(self):
        """The flag that asked for staged reads, for messages."""
        return '--staged_vars' if self.staged_vars else '--variable_consistency=relaxed'

    def _check_all_reduce(self):
        if self.all_reduce_spec:
            try:
                allreduce_spec.parse(self.all_reduce_spec)
            except ValueError as e:
                raise errors.ConfigError('--%s' % e) from None
        errors.require_at_least(self, 0, 'gradient_repacking', 'agg_small_grads_max_bytes',
                                'fusion_bucket_bytes')
        errors.require_at_least(self, 0, 'collective_subdivs', optional=True)
        errors.require(self.collective_subdivs is None or self.strategy.worker_all_reduce,
                       '--collective_subdivs sets the ring of the workers\' collective '
                       'all-reduce: it needs --variable_update in %s, got %r',
                       ', '.join(modes.names(lambda s: s.worker_all_reduce)),
                       self.variable_update)
        errors.require_at_least(self, 1, 'agg_small_grads_max_group')
        errors.require(not (self.gradient_repacking and self.agg_small_grads_max_bytes),
                       '--gradient_repacking and --agg_small_grads_max_bytes both pack gradients; '
                       'use one')
        self._check_buckets()
        errors.require_choice(self, 'gradient_transfer_dtype', TRANSFER_DTYPES)
        errors.require_choice(self, 'gradient_compression', compression.names())
        errors.require_choice(self, 'downlink_compression', compression.names())
        errors.require(self.downlink_compression == compression.NONE or
                       self.strategy.downlink_deltas,
                       '--downlink_compression sends deltas to the copies workers keep; it '
                       'needs --variable_update in %s, got %r',
                       ', '.join(modes.names(lambda s: s.downlink_deltas)),
                       self.variable_update)
        if self.compression_fraction is not None:
            errors.require(0 < self.compression_fraction <= 1,
                           '--compression_fraction must be in (0, 1], got %r',
                           self.compression_fraction)
            errors.require(compression.takes_fraction(self.compression) or
                           compression.takes_fraction(self.downlink_compression),
                           '--compression_fraction applies to the schemes that send a share of '
                           'the elements (%s), not to %s=%s with --downlink_compression=%s',
                           ', '.join(compression.fraction_schemes()), self.compression_flag,
                           self.compression, self.downlink_compression)
        errors.require(0 <= self.momentum_correction < 1,
                       '--momentum_correction must be in [0, 1), got %r',
                       self.momentum_correction)
        errors.require(not self.momentum_correction or self.compression != compression.NONE,
                       '--momentum_correction moves the momentum to the senders of compressed '
                       'gradients; without --gradient_compression use --optimizer=momentum')
        errors.require(self.gradient_transfer_dtype == 'float32' or
                       self.gradient_compression == compression.NONE,
                       '--gradient_transfer_dtype and --gradient_compression both compress '
                       'gradients; use one (--gradient_compression=%s)',
                       self.gradient_transfer_dtype)
        self._check_compressed_all_reduce()
        used = [flag for flag, value in (
            ('--all_reduce_spec', self.all_reduce_spec),
            ('--hierarchical_copy', self.hierarchical_copy),
            ('--gradient_repacking', self.gradient_repacking),
            ('--agg_small_grads_max_bytes', self.agg_small_grads_max_bytes)) if value]
        errors.require(not used or self.strategy.tower_all_reduce,
                       '%s applies to --variable_update in %s only, got %r', ', '.join(used),
                       ALL_REDUCE_UPDATES, self.variable_update)
        errors.require(not (self.all_reduce_spec and self.hierarchical_copy),
                       '--hierarchical_copy and --all_reduce_spec both choose the all-reduce; '
                       'use one')

    def _check_compressed_all_reduce(self):
        """A payload that cannot be summed rides an all-reduce's all-gather: refused, naming
        both flags, where the all-reduce has none."""
        if compression.summable(self.compression):
            return
        usable = ', '.join(n for n in compression.names() if compression.summable(n))
        errors.require(not self.strategy.worker_all_reduce,
                       '%s=%s cannot be summed, and --variable_update=%s adds what the '
                       'workers\' collective all-reduce carries; use a summable scheme (%s) '
                       'or a strategy with ps tasks', self.compression_flag, self.compression,
                       self.variable_update, usable)
        if self.strategy.tower_all_reduce and self.all_reduce_spec:
            missing = allreduce_spec.without_all_gather(self.all_reduce_spec)
            errors.require(not missing, '%s=%s cannot be summed, and --all_reduce_spec=%s '
                           'uses %s, which has no all-gather to carry it; use an algorithm '
                           'that has one (%s) or a summable scheme (%s)', self.compression_flag,
                           self.compression, self.all_reduce_spec, ', '.join(missing),
                           ', '.join(n for n, a in allreduce_spec.ALGORITHMS.items()
                                     if a.gathers), usable)

    def _check_buckets(self):
        if not self.fusion_bucket_bytes:
            return
        packs = [flag for flag, value in (
            ('--gradient_repacking', self.gradient_repacking),
            ('--agg_small_grads_max_bytes', self.agg_small_grads_max_bytes)) if value]
        errors.require(not packs, '--fusion_bucket_bytes and %s both pack gradients; use one',
                       ' and '.join(packs))
        errors.require(self.strategy.tower_all_reduce or self.strategy.worker_all_reduce,
                       '--fusion_bucket_bytes applies to --variable_update in %s only, got %r',
                       ', '.join(modes.names(lambda s: s.tower_all_reduce or
                                             s.worker_all_reduce)), self.variable_update)

"""Accuracy of each gradient compression scheme, with and without error feedback (#26).

Each scheme of --schemes (`tfhp.compression`; 'none': float32 gradients) trains the same CNN on
the same learnable data set for the same steps with the same seeds (repeat r: --seed + r), then
every checkpoint is evaluated on the whole validation set (experiments/convergence.py trains
and evaluates, as for four_combos' in_graph_sync). The mode is in-graph synchronous training
in one process, --num_replicas towers on virtual CPU devices and the variables on a parameter
device (`--variable_update=parameter_server`): each tower sends its compressed gradient there,
which decompresses every tower's payload before it means them, exactly what a between-graph
worker's payload meets at a ps. Every scheme runs in it (an all-reduce carries the schemes that
cannot be summed only with some specs); --tfhp_flags can pick another, e.g.
--tfhp_flags=--variable_update=replicated,--all_reduce_spec=xring.

Figures per scheme: validation top-1 after the last step and the training loss of one batch
after it, median [min-max] over --repeats; the bytes a replica sends per step as a share of
float32's (the scheme's `wire_ratio`); the difference of the top-1 medians to float32's and
whether it is real or within noise (experiments/stats.py: ranges apart, at 3 repeats or more).
A scheme without error feedback follows its twin with it (same compressor, same fraction), and
the conclusion says what the feedback buys.

--downlinks adds compressed downlink deltas (--downlink_compression): each scheme also trains
with the variables sent back to the workers as deltas in each of those schemes. Deltas need
workers that keep copies, so with any downlink other than 'none' every row (float32 too) runs
as between-graph synchronous workers of distributed_replicated, --num_replicas workers and one
ps on loopback (four_combos' between_graph_sync without its spare: every worker must apply
every delta), and a row's label names its downlink. Accuracy is the masters' (the checkpoint's),
which lead what the workers hold by what the deltas have not yet carried.

--momentum_correction=m moves the momentum to the senders of the compressed schemes (deep
gradient compression's momentum correction, `tfhp.compression.base`): each runs with
--optimizer=sgd --momentum_correction=m, while float32 keeps --optimizer=momentum --momentum=m,
the same training without compression (needs --optimizer=momentum).

  python -m experiments.compression_accuracy --plot=accuracy.png   # every scheme, 3 repeats
  python -m experiments.compression_accuracy --schemes=none,sign,sign_noef --repeats=5
  python -m experiments.compression_accuracy --momentum_correction=0.9 --plot=corrected.png
  python -m experiments.compression_accuracy --schemes=none,sign --downlinks=none,sign
"""
import dataclasses
import functools

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

from absl import flags  # pylint: disable=g-import-not-at-top

from experiments import common
from experiments import convergence
from experiments import frame
from experiments import presets
from experiments import stats
from tfhp import compression
from tfhp import modes
from tfhp import plots
from tfhp import provenance
from tfhp.data import info as info_lib

FLAGS = flags.FLAGS
SCHEMES = ('none', 'float16', 'bfloat16', 'sign', 'sign_noef', 'topk', 'topk_noef', 'randomk')
COMBO = presets.combo(modes.IN_GRAPH, synchronous=True)
# With compressed downlink deltas: workers keeping copies of the ps's variables.
DOWNLINK_COMBO = presets.combo(modes.BETWEEN_GRAPH, synchronous=True)
DOWNLINK_FLAGS = ('--variable_update=distributed_replicated',)
FIGURES = ('final_accuracy', 'final_loss', 'images_per_sec')
TABLE = [('scheme', 'label', None), ('error feedback', 'error_feedback', None),
         ('wire ratio', 'wire_ratio', '%.3f'), ('down ratio', 'downlink_ratio', '%.3f'),
         ('val top-1', 'final_accuracy', '%.3f'),
         ('vs float32', 'accuracy_vs_float32', '%+.3f'), ('verdict', 'verdict', None),
         ('final loss', 'final_loss', '%.2f')]


def _compressor(scheme, fraction):
    return compression.get(scheme, compression.fraction_for(scheme, fraction))


def wire_ratio(scheme, fraction=None):
    """The bytes a replica sends per step in `scheme`, as a share of float32's: the scheme's
    `wire_ratio` (sign: 1/32, a sparse scheme 2 * fraction for values and indices)."""
    compressor = _compressor(scheme, fraction)
    return compressor.wire_ratio if compressor else 1.0


def label(scheme, downlink=compression.NONE):
    """A row's label: 'float32' for uncompressed gradients, else the scheme's name; then the
    downlink's scheme when the variables come back compressed."""
    name = 'float32' if scheme == compression.NONE else scheme
    return name if downlink == compression.NONE else '%s, %s down' % (name, downlink)


def twins(schemes, fraction=None):
    """{scheme without error feedback: its twin with it} among `schemes`: the same compressor
    and fraction, one keeping a residual and one not (e.g. sign_noef: sign)."""
    built = {s: _compressor(s, fraction) for s in schemes}
    found = {}
    for name, with_ef in built.items():
        for other, without in built.items():
            if (with_ef is not None and without is not None and with_ef.error_feedback and
                    not without.error_feedback and type(without) is type(with_ef) and
                    getattr(without, 'fraction', None) == getattr(with_ef, 'fraction', None)):
                found[other] = name
    return found


def ordered(schemes, fraction=None):
    """`schemes` with float32 first and each one without error feedback right after its twin."""
    pairs = twins(schemes, fraction)
    rows = [s for s in schemes if s == compression.NONE]
    for scheme in schemes:
        if scheme not in rows and scheme not in pairs:
            rows += [scheme] + [s for s in schemes if pairs.get(s) == scheme]
    return rows


def momentum_flags(scheme, momentum_correction):
    """The tfhp flags that put a momentum of `momentum_correction` on the senders of `scheme`
    (plain SGD updates), or, for float32, in its optimizer; none when it is 0."""
    if not momentum_correction:
        return []
    if scheme == compression.NONE:
        return ['--optimizer=momentum', '--momentum=%g' % momentum_correction]
    return ['--optimizer=sgd', '--momentum_correction=%g' % momentum_correction]


def measure(scheme, twin, fraction, options, data_dir, work_dir, tfhp_flags, seed,
            momentum_correction=0.0, downlink=None):
    """Trains and evaluates one scheme with one seed; its record.

    Args:
      scheme: a --gradient_compression value.
      twin: the scheme it is without error feedback, or None.
      fraction: --compression_fraction for the schemes that take one (None: registered).
      options: `convergence.Options`; data_dir: the learnable data set; work_dir: checkpoints.
      tfhp_flags: further tfhp flags (--tfhp_flags).
      seed: this repeat's --tf_random_seed.
      momentum_correction: the senders' momentum (`momentum_flags`); 0: the optimizer's.
      downlink: None: in one graph (COMBO); else a --downlink_compression scheme ('none':
        float32 values), between graphs (DOWNLINK_COMBO).
    """
    compressor = _compressor(scheme, fraction)
    extra = ['--gradient_compression=' + scheme] + momentum_flags(scheme, momentum_correction)
    if fraction is not None and (compression.takes_fraction(scheme) or
                                 compression.takes_fraction(downlink or compression.NONE)):
        extra.append('--compression_fraction=%g' % fraction)
    combo = COMBO
    if downlink is not None:
        combo = DOWNLINK_COMBO
        options = dataclasses.replace(options, spare_replicas=0)
        extra += list(DOWNLINK_FLAGS) + ['--downlink_compression=' + downlink]
    down = downlink or compression.NONE
    record = convergence.run_combo(combo, options, data_dir, work_dir,
                                   list(tfhp_flags) + extra, label(scheme, down), seed)
    return dict(record, study='compression_accuracy', scheme=scheme, downlink=down,
                twin_of=twin and label(twin, down),
                fraction=getattr(compressor, 'fraction', None),
                error_feedback=compressor.error_feedback if compressor else None,
                wire_ratio=wire_ratio(scheme, fraction),
                downlink_ratio=wire_ratio(down, fraction),
                momentum_correction=momentum_correction)


def compare_to_float32(records):
    """Marks each record against float32's (`stats.mark`) and adds the difference of the top-1
    medians ('accuracy_vs_float32') and its 'verdict'; without a float32 row, nothing."""
    reference = [r for r in records if r['scheme'] == compression.NONE and
                 r.get('downlink', compression.NONE) == compression.NONE]
    if not reference:
        return records
    stats.mark(records, reference[0], FIGURES)
    for record in records:
        if record is not reference[0]:
            record['accuracy_vs_float32'] = (record['final_accuracy']['median'] -
                                             reference[0]['final_accuracy']['median'])
            record['verdict'] = record['vs_reference']['final_accuracy']
    return records


@dataclasses.dataclass(frozen=True)
class Chance:
    """What guessing scores on the validation set: its level and one standard error."""
    level: float
    error: float

    @classmethod
    def of(cls, data_dir):
        """Uniform guessing over the data set's classes, on its validation examples."""
        info = info_lib.load(data_dir)
        level = 1.0 / info.num_classes
        return cls(level, (level * (1 - level) / info.num_examples['validation']) ** 0.5)


def conclusion(records, chance):
    """Lines: each scheme against float32, what error feedback buys in each twin pair, and the
    rows whose median top-1 is within 3 standard errors of chance."""
    lines = ['%s: top-1 %+.3f vs float32, %s' % (r['label'], r['accuracy_vs_float32'],
                                                 r['verdict'])
             for r in records if 'verdict' in r]
    words = {1: 'real', 0: 'within noise', -1: 'real, and against it'}
    by_label = {r['label']: r for r in records}
    for without in records:
        with_ef = by_label.get(without['twin_of'])
        if with_ef:
            lines.append('error feedback buys %s %+.3f top-1 over %s (%s)' % (
                with_ef['label'], with_ef['final_accuracy']['median'] -
                without['final_accuracy']['median'], without['label'],
                words[stats.compare(with_ef['final_accuracy'], without['final_accuracy'])]))
    lines += ['%s sits at chance (%.2f)' % (r['label'], chance.level) for r in records
              if r['final_accuracy']['median'] < chance.level + 3 * chance.error]
    return lines


# The plot's series: which rows each holds.
_KINDS = (('error feedback', lambda r: bool(r['error_feedback'])),
          ('float32 and casts (no state)', lambda r: r['error_feedback'] is None or (
              not r['error_feedback'] and not r['twin_of'])),
          ('no error feedback', lambda r: bool(r['twin_of'])))


def title(options, momentum_correction=0.0, between_graph=False):
    """The plot's title: the model, replicas (between-graph workers of distributed_replicated
    when `between_graph`), steps, optimizer (and where its momentum is applied) and the spread
    drawn."""
    optimizer = ('momentum %g on the compressed schemes\' senders, SGD updates'
                 % momentum_correction if momentum_correction else
                 '%s optimizer' % options.optimizer)
    replicas = ('distributed_replicated workers, 1 ps' if between_graph else
                'replicas in one graph')
    return '%s, %d %s, %d steps of %d per replica, %s, learning rate %g; %s' % (
        options.model, options.num_replicas, replicas, options.num_steps, options.batch_size,
        optimizer, options.learning_rate, plots.spread_text(options.repeats))


def plot(records, path, heading, chance, caption):
    """Validation top-1 and final training loss per scheme, error feedback and without it side
    by side at their scheme's tick (with compressed downlinks: each downlink's side by side at
    the gradient scheme's tick), min-max bars over the repeats.

    Args:
      records: the study's (they may be read back from its JSON lines).
      path: the file to write (.svg, .pdf, else PNG).
      heading: the title (`title`); chance: a `Chance`.
      caption: the line under it (`tfhp.provenance.caption()` when the study started).
    """
    downlinks = common.grouped(records, lambda r: r.get('downlink', compression.NONE))
    if list(downlinks) != [compression.NONE]:
        # A tick per gradient scheme, a series per downlink beside it.
        groups = list(common.grouped(records, lambda r: label(r['scheme'])))
        kinds = [('%s down' % label(d), lambda r, d=d: r.get('downlink') == d, True)
                 for d in downlinks]
        tick = lambda r: groups.index(label(r['scheme']))
        xlabel = 'gradients up (series: how the variables come down)'
    else:
        groups = [r['label'] for r in records if not r['twin_of']]
        # The stateless schemes have no twin beside them: their points stay on the tick.
        kinds = [(name, belongs, index != 1) for index, (name, belongs) in enumerate(_KINDS)]
        tick = lambda r: groups.index(r['twin_of'] or r['label'])
        xlabel = 'gradients on the wire'

    def series(key):
        rows = []
        for name, belongs, dodge in kinds:
            members = [r for r in records if belongs(r)]
            rows.append((name, [tick(r) for r in members], [r[key] for r in members],
                         {'linestyle': 'none', 'dodge': dodge}))
        return rows

    plots.line_panels(
        path, [('validation top-1', series('final_accuracy'), [(chance.level, 'chance')],
                'top-1 accuracy'),
               ('training loss after the last step', series('final_loss'), [], 'loss')],
        xlabel=xlabel, ylabel='', title=heading,
        xticks=list(enumerate(groups)), caption=caption)


def study():
    """Every scheme of --schemes, --repeats times in rounds, reported against float32."""
    common.check_choices('schemes', FLAGS.schemes, compression.names())
    options, data_dir = convergence.study_setup()
    corrected = FLAGS.momentum_correction
    if corrected and options.optimizer != 'momentum':
        raise ValueError('--momentum_correction=%g compares with float32 under '
                         '--optimizer=momentum; got --optimizer=%s'
                         % (corrected, options.optimizer))
    fraction = FLAGS.compression_fraction
    common.check_choices('downlinks', FLAGS.downlinks, compression.names())
    pairs = twins(FLAGS.schemes, fraction)
    # Any compressed downlink puts every row between graphs (the module doc).
    downlinks = ([None] if FLAGS.downlinks == [compression.NONE] else FLAGS.downlinks)
    rows = [functools.partial(measure, s, pairs.get(s), fraction, options, data_dir,
                              FLAGS.work_dir, FLAGS.tfhp_flags,
                              momentum_correction=corrected, downlink=d)
            for s in ordered(FLAGS.schemes, fraction) for d in downlinks]
    chance = Chance.of(data_dir)
    heading = title(options, corrected, between_graph=downlinks != [None])
    caption = provenance.caption()  # the commit that ran, not the one at the end

    def table(records):
        print(heading)
        common.print_table(records, TABLE, 'float32')
        print('conclusion, from the repeats (experiments/stats.py):')
        print('\n'.join('  ' + line for line in conclusion(records, chance)))

    frame.run(rows, FIGURES, table, finish=compare_to_float32,
              plot=lambda records, path: plot(records, path, heading, chance, caption))


if __name__ == '__main__':
    flags.DEFINE_list('schemes', list(SCHEMES), 'Gradient compression schemes (none: float32).')
    flags.DEFINE_float('compression_fraction', None, 'Share of the elements the sparse schemes '
                       'send (default: each scheme\'s registered one, 0.01).')
    flags.DEFINE_list('downlinks', [compression.NONE], 'Each scheme also trained with the '
                      'variables sent back as deltas in each of these --downlink_compression '
                      'schemes (none: float32); any but none runs every row between graphs '
                      '(distributed_replicated).')
    flags.DEFINE_float('momentum_correction', 0.0, 'The compressed schemes\' senders apply '
                       'this momentum, their updates plain SGD; float32 runs the momentum '
                       'optimizer at it (0: every scheme runs --optimizer).')
    frame.main(study, **convergence.define_flags(
        convergence.Options(num_steps=300, eval_every=50), 'tfhp_compression_accuracy',
        plot='top-1 and final loss per scheme'))

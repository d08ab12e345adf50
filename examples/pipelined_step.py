"""A hand-wired pipelined step: RecordInput -> staging -> preprocess -> staging -> model.

Writes a small learnable TFRecord set (`tfhp.data.synthetic`), then builds, by hand, the
software pipeline tfhp's RecordInput path is made of:

  A  read        RecordInput takes a batch of serialized records        (scope `input`)
  S1             a staging area on the host
  B  preprocess  each record parsed and decoded by its own ops; parallel_stack builds the
                 batch as records finish                                (scope `preprocess`)
  S2             a staging area on the tower's device
  C  model       forward, backward, apply                               (scopes `tower_0/...`)

One `session.run` of the train op then reads step k+2, preprocesses step k+1 and trains on
step k. The areas must be filled first, one prefix of the put ops at a time: the example steps
through that warm-up with `tfhp.profiling.stepping.step_through`, printing each area's size
after each run ([1, 0] after the first prefix, [1, 1] after the second and after every step),
trains a few steps, analyses one traced step with `tfhp.profiling`, and drains the areas.

  python examples/pipelined_step.py --steps=5 [--trace_dir=/tmp/pipelined]

See docs/guide.md for a walk through the code.
"""
import argparse
import tempfile

from tfhp import startup

startup.prepare_process()  # before TensorFlow is imported

import tensorflow.compat.v1 as tf  # pylint: disable=g-import-not-at-top,wrong-import-position

from tfhp import compat
from tfhp import session as session_lib
from tfhp.data import synthetic
from tfhp.ops import batching
from tfhp.ops import record_input
from tfhp.ops import scopes
from tfhp.pipelines import example_format
from tfhp.pipelines import preprocessing
from tfhp.pipelines import software_pipeline
from tfhp.profiling import analysis
from tfhp.profiling import report
from tfhp.profiling import stepping

HOST = '/cpu:0'    # where records are read and preprocessed
DEVICE = '/cpu:0'  # the tower's device ('/gpu:0' on a GPU machine)


def build_pipeline(pattern, batch_size, image_size, num_classes):
    """The two stages A and B as a `software_pipeline.Chain` (each followed by an area)."""
    example_fn = preprocessing.example_fn(image_size, num_classes, train=True)

    def read():
        with tf.device(HOST), tf.name_scope(scopes.INPUT):
            records = record_input.read(pattern, batch_size, parallelism=2,
                                        buffer_size=4 * batch_size, seed=1)
        return [software_pipeline.Group(HOST, records)]  # -> S1 on the host

    def preprocess(nests):
        (records,) = nests  # what S1 gave: one batch of serialized records
        with tf.device(HOST), tf.name_scope(scopes.PREPROCESS):
            examples = [example_fn(record) for record in batching.split(records)]
            (batch,) = batching.stack_towers(examples, num_towers=1)
        return [software_pipeline.Group(DEVICE, batch)]  # -> S2 on the tower's device

    return software_pipeline.chain([read, preprocess], staged=True, name='records')


def build_model(images, labels, num_classes):
    """Tower 0: a small convolutional net, its loss, gradients and update, under the stage
    scopes the trace analyser reads. Returns (update op, loss)."""
    with tf.device(DEVICE), tf.name_scope(scopes.tower(0)):
        with tf.name_scope(scopes.FORWARD):
            filters = tf.get_variable('conv', [3, 3, 3, 8])
            hidden = tf.nn.relu(tf.nn.conv2d(images, filters, strides=2, padding='SAME'))
            hidden = tf.reshape(hidden, [int(images.shape[0]), -1])
            weights = tf.get_variable('dense', [int(hidden.shape[1]), num_classes])
            logits = tf.matmul(hidden, weights)
            loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(
                labels=labels, logits=logits))
        with tf.name_scope(scopes.BACKWARD):
            variables = [filters, weights]
            grads = tf.gradients(loss, variables)
        with tf.name_scope(scopes.APPLY):
            global_step = tf.train.get_or_create_global_step()
            update = tf.train.MomentumOptimizer(0.05, 0.9).apply_gradients(
                zip(grads, variables), global_step=global_step)
    return update, loss


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--data_dir', default=None, help='where to write the data set '
                        '(default: a temporary directory)')
    parser.add_argument('--examples', type=int, default=256, help='training records')
    parser.add_argument('--image_size', type=int, default=16)
    parser.add_argument('--num_classes', type=int, default=4)
    parser.add_argument('--batch_size', type=int, default=16)
    parser.add_argument('--steps', type=int, default=5)
    parser.add_argument('--trace_dir', default=None,
                        help='also write a Chrome trace of every stepped-through run here')
    args = parser.parse_args()
    compat.enable_graph_mode()

    data_dir = args.data_dir or tempfile.mkdtemp(prefix='tfhp_pipelined_')
    synthetic.generate(data_dir, num_classes=args.num_classes, image_size=args.image_size,
                       train_examples=args.examples, validation_examples=args.num_classes,
                       train_shards=2, validation_shards=1, num_threads=1)
    pattern = example_format.shard_pattern(data_dir, 'train')
    files = record_input.list_files(pattern)  # refuses files RecordInput would hang on
    print('data: %d records of %dx%d in %d files under %s'
          % (args.examples, args.image_size, args.image_size, len(files), data_dir))

    chain = build_pipeline(pattern, args.batch_size, args.image_size, args.num_classes)
    (images, labels), = chain.outputs  # what S2 gives the tower this step
    update, loss = build_model(images, labels, args.num_classes)
    train_op = tf.group(update, *chain.put_ops, name='train_op')
    sizes = software_pipeline.sizes_by_name(chain)  # {area name: size tensor}, S1 then S2
    print('staging areas: %s' % ', '.join(sizes))

    with tf.Session(config=session_lib.config_proto()) as sess:
        sess.run(tf.global_variables_initializer())
        # The warm-up, one traced run per prefix, then the first step.
        for run in stepping.step_through(sess, chain.warmup_ops, train_op, args.trace_dir,
                                         sizes=sizes):
            ran = ', '.join(op.name for op in tf.nest.flatten(run.fetches))
            print('%-9s ran %-34s staging sizes %s'
                  % (run.label, ran, list(run.sizes.values())))
        for i in range(2, args.steps + 1):
            _, value = sess.run([train_op, loss])
            print('step %d: loss %.4f' % (i, value))

        # One more step, traced (never time a traced step), analysed by stage.
        (_, value), metadata = session_lib.run_traced(sess, [train_op, loss])
        figures = analysis.analyze(metadata)
        print('traced step: loss %.4f' % value)
        print(report.format_report(figures))
        totals = figures.stage_totals()
        print('stages with time: %s' % ', '.join(
            s for s in scopes.STAGES if totals.get(s, 0.0) > 0))

        # Drain: the consumer runs with ever shorter suffixes of the puts, reading nothing new.
        for drain in chain.drain_ops:
            sess.run([update] + list(drain))
        print('after draining: staging sizes %s' % [int(n) for n in
                                                    sess.run(list(sizes.values()))])


if __name__ == '__main__':
    main()

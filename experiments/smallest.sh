#!/usr/bin/env bash
# Every study once at its smallest setting (1 repeat, a few steps, the smallest model), its JSON
# lines to DIR/<study>.jsonl and its output to DIR/<study>.txt, so that the figures of two
# commits can be compared. Run from the root of a checkout (the one whose studies run):
#
#   experiments/smallest.sh DIR [STUDY ...]       # all studies, or those named
#   git worktree add /tmp/before <commit> && (cd /tmp/before && "$OLDPWD"/experiments/smallest.sh /tmp/before.out)
#
# Flags are given by their older names (--num_batches, --tf_random_seed, --output, ...), which
# the frame keeps as aliases, so the same command runs before the studies moved onto it. Each
# run is bounded by 30 minutes; a failure is reported and the next study runs. links_study,
# link_check and emulated_cluster need root and iproute2 (without them they exit 2).
# published_scaling predicts one model's points (pure Python, a second): a deterministic
# function of the inputs and the step model.
set -uo pipefail
if [ $# -lt 1 ] || [ ! -d experiments ]; then
  echo "usage (from a checkout's root): experiments/smallest.sh DIR [STUDY ...]" >&2
  exit 2
fi
OUT=$1; shift
ONLY=" $* "
mkdir -p "$OUT"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} TF_CPP_MIN_LOG_LEVEL=2
failed=()
run() {  # run STUDY FLAGS...: python -m experiments.STUDY FLAGS, its JSON lines to OUT/STUDY.jsonl
  local study=$1; shift
  [ "$ONLY" = "  " ] || [[ "$ONLY" == *" $study "* ]] || return 0
  rm -f "$OUT/$study.jsonl"
  echo "=== $study: $*"
  if ! timeout 1800 python -m "experiments.$study" "$@" >"$OUT/$study.txt" 2>&1; then
    failed+=("$study")
    tail -3 "$OUT/$study.txt"
  fi
}
result() { echo "--${2:-result_file}=$OUT/$1.jsonl"; }

run example_study --models=trivial --batch_sizes=2 --steps=2 --warmup_steps=1 --repeats=1 \
  "$(result example_study)"
run runner_overhead --models=trivial --bn_models=resnet50 --batch_size=2 --num_batches=2 \
  --repeats=1 "$(result runner_overhead)"
run replication_bench --devices=1,2 --model=trivial --batch_size=2 --num_batches=2 \
  --num_warmup_batches=1 --repeats=1 "$(result replication_bench)"
run allreduce_bench --devices=2 --sizes=1k,64k --memcpy_bytes=1m --repeats=1 \
  "$(result allreduce_bench)"
run input_bench --settings=small32 --num_batches=2 --num_warmup_batches=1 \
  --num_examples_scale=0.01 --repeats=1 "$(result input_bench)"
run distributed_bench --workers=1,2 --modes_model=trivial --modes_batch_size=2 --steps=2 \
  --warmup_steps=1 --repeats=1 "$(result distributed_bench output)"
# lenet at 16x16 is the convergence studies' model: the smallest that reaches a target.
run four_combos --num_steps=40 --eval_every=20 --target_accuracy=0.3 --repeats=1 \
  "$(result four_combos)"
run stale_gradients --num_steps=40 --eval_every=20 --target_accuracy=0.3 \
  --async_warmup_steps=10 --repeats=1 "$(result stale_gradients)"
run lr_scaling --num_steps=40 --eval_every=20 --target_accuracy=0.3 --towers=2 --repeats=1 \
  "$(result lr_scaling)"
run compression_accuracy --schemes=none,sign,sign_noef --num_steps=20 --eval_every=20 \
  --repeats=1 "$(result compression_accuracy)"
run ablations --num_batches=2 --num_warmup_batches=1 --repeats=1 "$(result ablations)"
run model_parallel --width=64 --depth=1 --batch_size=8 --input_size=16 --num_steps=2 \
  --repeats=1 "$(result model_parallel)"
run softmax_ps --num_ps=1,2 --vocab_size=2000 --dim=16 --batch_size=32 --num_sampled=16 \
  --num_steps=5 --num_warmup=1 --repeats=1 "$(result softmax_ps)"
run ensemble --members=2 --top_k=2 --steps=5 --validation_examples=100 --test_examples=100 \
  --repeats=1 "$(result ensemble)"
run precision_bench --models=trivial --batch_size=2 --num_batches=2 --slow_num_batches=2 \
  --num_warmup_batches=1 --rounds=1 "$(result precision_bench)"
# Without --reference only tfhp runs; REFERENCE=path/to/tf_cnn_benchmarks.py adds it.
run vs_reference --models=trivial:2 --num_batches=2 --num_warmup_batches=1 --rounds=1 \
  ${REFERENCE:+--reference="$REFERENCE"} "$(result vs_reference)"
# Every fault: its job is already the smallest (the trivial model at 8x8).
run fault_bounds "$(result fault_bounds)"
run published_scaling --models=resnet50 "$(result published_scaling)"
run emulated_cluster --profile=tests/data/resnet20_profile.json --workers=1 --ps=1 \
  --rates=1gbit --steps=2 --warmup_steps=1 --repeats=1 "$(result emulated_cluster)"
run links_study --models=null_dense --rates=1gbit --workers=1,2 --num_ps=1 --modes_workers=2 \
  --backup_rates=1gbit --steps=2 --warmup_steps=1 --repeats=1 "$(result links_study)"
run link_check --rates=100mbit --seconds=1 --repeats=1 "$(result link_check)"
# Three faults, one of each kind, in about 2 minutes (the suite's version).
run chaos --duration_s=60 --interval_s=5,10 --for_s=1,8 --faults=3 --step_ms=40 \
  --save_model_steps=10 "$(result chaos)"

if [ ${#failed[@]} -gt 0 ]; then
  echo "failed: ${failed[*]} (see $OUT/<study>.txt)" >&2
  exit 1
fi

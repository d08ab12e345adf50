#!/usr/bin/env bash
# Re-measures every figure in the README on this machine (CPU defaults; about 40 minutes on
# 2 cores). Each script prints its table; JSON lines go to $OUT/*.jsonl.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results}
mkdir -p "$OUT"
run() { local name=$1; shift; echo "=== $name: $*"; timeout 900 "$@" 2>&1 | grep -v -E '^[WI][0-9]{4} |^WARNING|rebuild TensorFlow' | tee "$OUT/$name.txt"; }
run runner_overhead python experiments/runner_overhead.py --result_file="$OUT/runner_overhead.jsonl"
run replication python experiments/replication_bench.py --result_file="$OUT/replication.jsonl"
run allreduce python experiments/allreduce_bench.py --repeats=5 --result_file="$OUT/allreduce.jsonl"
run input python experiments/input_bench.py --settings=small32 --result_file="$OUT/input.jsonl"
run distributed python experiments/distributed_bench.py --workers=1,2,4 --steps=50 --output="$OUT/distributed.jsonl"
run four_combos python experiments/four_combos.py --result_file="$OUT/four_combos.jsonl"
run backup_workers python experiments/ablations.py --ablations=backup_workers --result_file="$OUT/ablations.jsonl"
run model_parallel python experiments/model_parallel.py --result_file="$OUT/model_parallel.jsonl"
run stale_gradients python experiments/stale_gradients.py --result_file="$OUT/stale.jsonl"
run softmax_ps python experiments/softmax_ps.py --result_file="$OUT/softmax.jsonl"

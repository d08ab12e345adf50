#!/usr/bin/env bash
# Re-measures every figure of docs/results.md on this machine (CPU defaults). Most scripts now run
# every row 3 times (--repeats), so expect roughly three times the 40 minutes single runs took
# on 2 cores (an estimate; not timed end to end). Each script prints its table; JSON lines go to
# $OUT/*.jsonl and, where matplotlib is installed (pip install -e '.[plots]'), plots to
# $OUT/*.png.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-results}
mkdir -p "$OUT"
plot() { python -c 'import matplotlib' 2>/dev/null && echo "--plot=$OUT/$1.png"; }
run() { local name=$1; shift; echo "=== $name: $*"; timeout 1800 "$@" 2>&1 | grep -v -E '^[WI][0-9]{4} |^WARNING|rebuild TensorFlow' | tee "$OUT/$name.txt"; }
run runner_overhead python -m experiments.runner_overhead --result_file="$OUT/runner_overhead.jsonl"
run replication python -m experiments.replication_bench --result_file="$OUT/replication.jsonl" $(plot replication)
run allreduce python -m experiments.allreduce_bench --repeats=5 --result_file="$OUT/allreduce.jsonl" $(plot allreduce)
run input python -m experiments.input_bench --settings=small32 --num_batches=100 --result_file="$OUT/input.jsonl"
run distributed python -m experiments.distributed_bench --workers=1,2,4 --steps=50 --output="$OUT/distributed.jsonl" $(plot distributed_null)
run job_start python -m experiments.job_start --result_file="$OUT/job_start.jsonl"
run four_combos python -m experiments.four_combos --result_file="$OUT/four_combos.jsonl" $(plot four_combos)
run ablations python -m experiments.ablations --result_file="$OUT/ablations.jsonl"
run model_parallel python -m experiments.model_parallel --result_file="$OUT/model_parallel.jsonl"
run stale_gradients python -m experiments.stale_gradients --result_file="$OUT/stale.jsonl" $(plot stale_gradients)
run lr_scaling python -m experiments.lr_scaling --result_file="$OUT/lr_scaling.jsonl" $(plot lr_scaling)
run compression_accuracy python -m experiments.compression_accuracy --result_file="$OUT/compression_accuracy.jsonl" $(plot compression_accuracy)
run compression_accuracy_sgd python -m experiments.compression_accuracy --optimizer=sgd --learning_rate=0.5 --result_file="$OUT/compression_accuracy_sgd.jsonl" $(plot compression_accuracy_sgd)
run softmax_ps python -m experiments.softmax_ps --result_file="$OUT/softmax.jsonl"
run precision python -m experiments.precision_bench --result_file="$OUT/precision.jsonl"
run ensemble python -m experiments.ensemble --result_file="$OUT/ensemble.jsonl"
run cluster_search python -m experiments.cluster_search --result_file="$OUT/cluster_search.jsonl" $(plot cluster_search)
# CPU defaults: oneDNN and the thread pools, ranked by the sweep for three models.
for mb in lenet:32:50 alexnet:16:20 resnet50:8:10; do
  IFS=: read -r m b n <<<"$mb"
  run "cpu_defaults_$m" python -m tfhp.sweep --repeats=2 --grid=env:TF_ENABLE_ONEDNN_OPTS=1,0 \
    --grid=num_intra_threads=0,1 --grid=num_inter_threads=0,1 --result_file="$OUT/cpu_defaults.jsonl" \
    -- --model="$m" --batch_size="$b" --num_batches="$n"
done
# Emulated links need root and iproute2 (the script says so and exits 2 without them).
run links python -m experiments.links_study --repeats=2 --result_file="$OUT/links.jsonl" $(plot links)
run links_buckets python -m experiments.links_study --studies=modes --modes=all_reduce_one_pack,all_reduce_buckets --modes_model=resnet20@emulated --emulated_compute=tests/data/resnet20_profile.json --modes_rate=60mbit --modes_workers=2,4 --repeats=3 --result_file="$OUT/links_buckets.jsonl" $(plot links_buckets)
run links_priority python -m experiments.links_study --studies=saturation --emulated_compute=tests/data/alexnet_profile.json --models=alexnet@emulated --saturation_transfers="background pulls","background window","background priority" --rates=370mbit --num_ps=1 --workers=1,2 --repeats=3 --result_file="$OUT/links_priority.jsonl" $(plot links_priority)
run links_sizes python -m experiments.links_study --studies=saturation --emulated_compute=tests/data/resnet20_profile.json --models=resnet20@emulated --saturation_transfers="background priority","background priority@128k/128k" --rates=60mbit --num_ps=1 --workers=1,2 --repeats=3 --result_file="$OUT/links_sizes.jsonl" $(plot links_sizes)
run links_sizes_resnet20 python -m experiments.links_study --studies=saturation --emulated_compute=tests/data/resnet20_profile.json --models=resnet20@emulated --saturation_transfers="background priority@128k/128k","background priority@64k/64k" --rates=60mbit --num_ps=1 --workers=1,2 --repeats=3 --result_file="$OUT/links_sizes_resnet20.jsonl" $(plot links_sizes_resnet20)
run links_pull_clocked_300mbit python -m experiments.links_study --studies=saturation --models=null_dense --num_ps=1,2,3 --workers=1,2,4,6 --saturation_transfers="pull-clocked@128k" --rates=300mbit --repeats=3 --result_file="$OUT/links_pull_clocked_300mbit.jsonl" $(plot links_pull_clocked_300mbit)
run links_pull_clocked_1gbit python -m experiments.links_study --studies=saturation --models=null_dense --num_ps=1,2,3 --workers=1,2,4,6 --saturation_transfers="pull-clocked@256k" --rates=1gbit --repeats=3 --result_file="$OUT/links_pull_clocked_1gbit.jsonl" $(plot links_pull_clocked_1gbit)
run links_pull_clocked_100mbit python -m experiments.links_study --studies=saturation --models=null_dense --num_ps=2,3 --workers=4,6 --saturation_transfers="pull-clocked@128k" --rates=100mbit --link_port_buffer=1mb --repeats=3 --result_file="$OUT/links_pull_clocked_100mbit.jsonl" $(plot links_pull_clocked_100mbit)
run links_pull_clocked_cubic python -m experiments.links_study --studies=saturation --models=null_dense --num_ps=1,2,3 --workers=1,2,4,6 --saturation_transfers="pull-clocked@128k" --rates=300mbit --link_congestion_control=cubic --repeats=3 --result_file="$OUT/links_pull_clocked_cubic.jsonl" $(plot links_pull_clocked_cubic)
run links_ring_300mbit python -m experiments.links_study --studies=modes --modes=all_reduce,all_reduce_subdivs4 --modes_workers=2,4,6 --modes_rate=300mbit --repeats=3 --result_file="$OUT/links_ring_300mbit.jsonl" $(plot links_ring_300mbit)
run links_defaults python -m experiments.links_study --studies=modes --modes=replicated_defaults,replicated,all_reduce_defaults,all_reduce --modes_workers=2 --repeats=3 --link_congestion_control=cubic --result_file="$OUT/links_defaults.jsonl" $(plot links_defaults)
run links_layer_slices python -m experiments.links_study --studies=saturation --emulated_compute=experiments/profiles/lenet_x10.json --models=lenet@emulated --saturation_transfers="background window","background window+256k","background priority@256k/256k+256k" --rates=100mbit --num_ps=1 --workers=1,2 --repeats=3 --link_congestion_control=cubic --result_file="$OUT/links_layer_slices.jsonl" $(plot links_layer_slices)
run transfer_costs python -m experiments.transfer_costs --repeats=5 --result_file="$OUT/transfer_costs.jsonl"
for rate in 1gbit 100mbit; do for reads in nogrpc_batched_reads grpc_batched_reads; do
  run "transfer_costs_${rate}_$reads" python -m experiments.transfer_costs --link_rate=$rate --transfers=16 --chunk_bytes=1048576 --steps=3 --repeats=3 --$reads --result_file="$OUT/transfer_costs.jsonl"
done; done
run bucket_timeline python -m experiments.bucket_timeline --rate=60mbit --result_file="$OUT/bucket_timeline.jsonl" $(plot bucket_timeline)
run chaos python -m experiments.chaos --result_file="$OUT/chaos.jsonl" $(plot chaos)  # 20 minutes
# The reference benchmark is not a dependency: REFERENCE=path/to/tf_cnn_benchmarks.py runs it.
if [ -n "${REFERENCE:-}" ]; then
  run vs_reference python -m experiments.vs_reference --reference="$REFERENCE" --result_file="$OUT/vs_reference.jsonl"
fi

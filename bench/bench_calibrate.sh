#!/usr/bin/env bash
# What `ringsim calibrate --runs` costs (issue 27: under a minute on 2 cores for 10 rows): wall time of fits
# to runs generated from known figures, the rows' count, the figures fitted and the worst residual, with the
# children one at a time (RINGSIM_JOBS=1) and as many as the machine has.
#   nc24r-step: NC24r over Ethernet with NCCL, 1-5 nodes x 2 and 4 GPUs (10 rows), one collective at a time;
#   aws-flow:   p2.8xlarge parameter servers, collectives at once (the flow fidelity), the published 1- and
#               2-instance ResNet-50 runs at batches 64 and 32 (4 rows).
# Usage: bench/bench_calibrate.sh [BUILD_DIR]   (default: build)
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
ringsim="$build/bin/ringsim"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/nc24r.yaml" <<'EOF'
name: bench-calibrate
cluster: {sku: NC24r, nodes: 2, fabric: ethernet}
model: {name: resnet50, batch_per_gpu: 32}
training: {epochs: 1}
communication: {library: nccl}
EOF
cat >"$tmp/truth.yaml" <<'EOF'
compute:
  step_time_cv: 0.02
libraries:
  nccl:
    paths:
      ethernet:
        bandwidth_fraction: 0.40
EOF
echo "cluster.nodes,cluster.gpus_per_node,images_per_sec" >"$tmp/nc24r.csv"
for n in 1 2 3 4 5; do
  for g in 2 4; do
    "$ringsim" predict "$tmp/nc24r.yaml" --calibration "$tmp/truth.yaml" --set cluster.nodes=$n \
      --set cluster.gpus_per_node=$g --no-band --json "$tmp/p.json" >/dev/null
    echo "$n,$g,$(python3 -c 'import json,sys;print(repr(json.load(open(sys.argv[1]))["images_per_sec"]))' "$tmp/p.json")" \
      >>"$tmp/nc24r.csv"
  done
done
printf 'cluster.nodes,communication.parameter_servers,model.batch_per_gpu,images_per_sec\n1,1,64,378\n2,2,64,751\n1,1,32,333\n2,2,32,667\n' \
  >"$tmp/aws.csv"

printf "%-12s %5s %6s %8s %8s %14s\n" case rows jobs wall_s fitted worst_resid_%
fit() {  # CASE SCENARIO RUNS JOBS [--set ...]
  local name=$1 scenario=$2 runs=$3 jobs=$4
  shift 4
  local t0 t1 out
  t0=$(date +%s.%N)
  out=$(RINGSIM_JOBS=$jobs "$ringsim" calibrate "$scenario" "$@" --runs "$runs" -o "$tmp/overlay.yaml")
  t1=$(date +%s.%N)
  printf "%-12s %5s %6s %8.2f %8s %14s\n" "$name" "$(($(wc -l <"$runs") - 1))" "$jobs" "$(echo "$t1 - $t0" | bc)" \
    "$(grep -c '^  fitted' <<<"$out")" \
    "$(awk '$NF ~ /%$/ && $1 ~ /^[0-9]+$/ {v=$NF; sub("%","",v); v=v+0; if (v<0) v=-v; if (v>m) m=v} END {print m+0}' <<<"$out")"
}
for jobs in 1 "$(nproc)"; do
  fit nc24r-step "$tmp/nc24r.yaml" "$tmp/nc24r.csv" "$jobs"
  fit aws-flow "$root/validate/scenarios/aws_p2_8xlarge_tf_distributed_replicated.yaml" "$tmp/aws.csv" "$jobs" \
    --set model.name=resnet50
done

#!/usr/bin/env bash
# What the band costs beside the point (issue 52: the band at most the point's cost; issue 54: Llama 3 70B
# on 2,048 x ND96isr_H100_v5 in <= 10 s): `ringsim predict` with --no-band and with the default band (16
# samples and the catalog's own figures, in children, all the machine's cores), step fidelity, one after the
# other in one run. Prints each case's wall times, the band's share and the predicted rate with its band.
# Usage: bench/bench_band.sh [BUILD_DIR]   (default: build)
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
gpt2=(--set cluster.sku=ND96isr_H100_v5 --set model.name=gpt2_xl --set model.seq_len=1024
  --set model.batch_per_gpu=8 --set cluster.fabric_topology=rail_optimized
  --set communication.framework=pytorch_ddp --set cluster.nodes=2048)
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT
seconds() {  # wall seconds of the command, its output in $tmp
  local start end
  start=$(date +%s.%N)
  "$@" >"$tmp"
  end=$(date +%s.%N)
  awk -v a="$start" -v b="$end" 'BEGIN { print b - a }'
}
run_case() {  # name, then the predict arguments
  local name=$1
  shift
  local point band rate
  point=$(seconds "$build/bin/ringsim" predict "$@" --fidelity step --no-band)
  band=$(seconds "$build/bin/ringsim" predict "$@" --fidelity step)
  rate=$(grep -m1 -E '^  (sequences|images)/s \(total\)' "$tmp" | sed -E 's/^ +[a-z]+\/s \(total\) +//')
  printf '%-30s %8.2f %9.2f %8.1fx   %s\n' "$name" "$point" "$band" "$(awk -v p="$point" -v b="$band" 'BEGIN { print (b - p) / p }')" \
    "$rate"
}
printf '%-30s %8s %9s %9s   %s\n' case "point s" "banded s" "band/pt" "rate (band)"
run_case "Llama 3 70B HSDP, 2048 VMs" "$root/scenarios/llama3_70b_hsdp_2048x_nd96isr_h100_v5.yaml"
run_case "GPT-2 XL DDP ring, 2048 VMs" "$root/scenarios/bert_large_bf16_plan.yaml" "${gpt2[@]}"

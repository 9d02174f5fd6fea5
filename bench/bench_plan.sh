#!/usr/bin/env bash
# What a plan over sharding, checkpointing and micro-batch costs (issue 54: <= 2 min on 2 cores for today's
# sizes x 1-256 VMs x sharding x checkpointing x micro-batch): `ringsim plan` of Llama 3 8B under FSDP (2T
# tokens, 60-day deadline) over every priced size that runs bf16, with all the machine's cores. Prints the wall
# time, the configurations searched, priced and skipped (most for memory) and the winner.
# Usage: bench/bench_plan.sh [BUILD_DIR]   (default: build)
set -euo pipefail
build=${1:-build}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
start=$(date +%s.%N)
"$build/bin/ringsim" plan "$root/scenarios/llama3_8b_fsdp_2x_nd96isr_h100_v5.yaml" --deadline 60d \
  --nodes 1,2,4,8,16,32,64,128,256 --shardings full_shard,hybrid_shard --activation-checkpointing none,full \
  --batch-per-gpu 1,2,4 --json "$tmp/plan.json" >"$tmp/plan.txt" 2>/dev/null || true
end=$(date +%s.%N)
python3 - "$tmp/plan.json" "$start" "$end" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
c, s = j["configurations"], j["skipped"]
memory = sum(1 for x in s if "does not fit" in x["why"])
best = c[0]
print(f"wall {float(sys.argv[3]) - float(sys.argv[2]):.1f} s; {len(c)} priced configurations, {len(s)} skipped "
      f"({memory} for memory); winner {best['vms']} x {best['sku']} {best.get('settings', {})} "
      f"{best['time_to_train_s'] / 3600:.0f} h ${best['cost_usd']:,.0f}")
PY

#!/usr/bin/env bash
# Emulation vs simulation cost: wall time and peak memory of `ringsim emulate` (the SMPI process: PSS,
# sampled from /proc/PID/smaps_rollup every 0.2 s; RSS counts SMPI's shared mappings once per mapping and
# is meaningless here) next to `ringsim predict` on the same scenario, for each rank count given.
# Usage: bench/bench_emulate.sh [BUILD_DIR] [NODES...]   (default: build, 16 64 = 64 and 256 ranks)
set -euo pipefail
build=${1:-build}
shift || true
nodes=("$@")
[ ${#nodes[@]} -gt 0 ] || nodes=(16 64)
root=$(cd "$(dirname "$0")/.." && pwd)
ringsim="$build/bin/ringsim"
scenario="$root/scenarios/resnet50_imagenet_8x_nc24rs_v3.yaml"

peak_pss_kb() {  # PID of a running command: the largest PSS of its smpimain child until it ends
  local pid=$1 peak=0 child pss
  while kill -0 "$pid" 2>/dev/null; do
    for child in $(pgrep -f smpimain || true); do
      pss=$(awk '/^Pss:/ {print $2}' "/proc/$child/smaps_rollup" 2>/dev/null || echo 0)
      [ -n "$pss" ] && [ "$pss" -gt "$peak" ] && peak=$pss
    done
    sleep 0.2
  done
  echo "$peak"
}

printf "%-6s %-22s %12s %12s %14s\n" ranks run wall_s peak_MB iteration_ms
for n in "${nodes[@]}"; do
  ranks=$((n * 4))
  t0=$(date +%s.%N)
  "$ringsim" emulate "$scenario" --set cluster.nodes="$n" --iterations 1 --warmup 0 --json /tmp/bench_emulate.json \
    >/dev/null &
  pid=$!
  pss=$(peak_pss_kb $pid)
  wait $pid
  t1=$(date +%s.%N)
  it=$(python3 -c 'import json;print(round(json.load(open("/tmp/bench_emulate.json"))["iteration_time_s"]*1e3,3))')
  printf "%-6s %-22s %12.2f %12.1f %14s\n" "$ranks" "emulate (SMPI)" "$(echo "$t1 - $t0" | bc)" "$(echo "$pss / 1024" | bc -l)" "$it"
  for fid in flow step; do
    out=$(/usr/bin/time -f "%e %M" "$ringsim" predict "$scenario" --set cluster.nodes="$n" --fidelity $fid \
      --json /tmp/bench_predict.json 2>&1 >/dev/null | tail -1)
    it=$(python3 -c 'import json;print(round(json.load(open("/tmp/bench_predict.json"))["iteration_time_s"]*1e3,3))')
    printf "%-6s %-22s %12.2f %12.1f %14s\n" "$ranks" "predict --fidelity $fid" "${out% *}" "$(echo "${out#* } / 1024" | bc -l)" "$it"
  done
done

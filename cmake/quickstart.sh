#!/usr/bin/env bash
# ringsim quick start on Debian 12: installs what is missing (apt-get, as root or through sudo),
# configures and builds (Release) into build/, then
#   run   - predicts training time for the bundled default scenario (ringsim predict)
#   test  - runs the whole test suite (ctest)
# Extra CMake arguments can be passed in RINGSIM_CMAKE_ARGS.
set -euo pipefail

mode=${1:-run}
case "$mode" in run|test) ;; *) echo "usage: $0 run|test" >&2; exit 2 ;; esac
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build="$root/build"
jobs=$(nproc 2>/dev/null || echo 2)

packages=(g++ make cmake pkg-config libsimgrid-dev libboost-graph-dev libyaml-cpp-dev libeigen3-dev catch2
          libopenmpi-dev openmpi-bin nlohmann-json3-dev libcli11-dev gnuplot-nox)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  echo "ringsim: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# shellcheck disable=SC2086 # RINGSIM_CMAKE_ARGS is a list of arguments
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release ${RINGSIM_CMAKE_ARGS:-}
cmake --build "$build" -j "$jobs"

if [ "$mode" = run ]; then
  scenario="$root/scenarios/resnet50_imagenet_8x_nc24rs_v3.yaml"
  mkdir -p "$build/out"
  "$build/bin/ringsim" predict "$scenario" --json "$build/out/prediction.json" \
    --trace "$build/out/timeline.json" --links "$build/out/links.csv"
  echo "ringsim: wrote $build/out/prediction.json, timeline.json (open in Perfetto or chrome://tracing), links.csv"
else
  cd "$build"
  ctest --output-on-failure -j "$jobs"
fi

#!/bin/sh
# Runs ringsim-real bench on a GPU transport; exits 77 (ctest: skipped) with "skipped: no GPU" when the
# machine has no CUDA device, so a missing GPU is never a silent pass.
# Usage: gpu_or_skip.sh MPIEXEC RINGSIM_REAL TRANSPORT
mpiexec=$1 real=$2 transport=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ranks=1
if command -v nvidia-smi >/dev/null 2>&1; then
  ranks=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
fi
[ "$ranks" -ge 1 ] || ranks=1
[ "$ranks" -le 8 ] || ranks=8
out=$("$mpiexec" --oversubscribe -n "$ranks" "$real" bench -b 8 -e 64M -f 8 -n 5 -w 2 --transport "$transport" 2>&1)
status=$?
echo "$out"
if echo "$out" | grep -q "needs a GPU"; then
  echo "skipped: no GPU"
  exit 77
fi
[ $status -eq 0 ] || exit $status
echo "$out" | grep -q "# wrong elements in total: 0"

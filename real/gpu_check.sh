#!/usr/bin/env bash
# The GPU checks of real/README.md on one machine with one GPU: the CUDA-staged transport with 2 and 4 ranks
# sharing the GPU, NCCL on one rank (it refuses two ranks on one GPU), `bench` and `train`, then single-GPU
# training rates with PyTorch (real/single_gpu_rates.py) to hold against topologies/compute.yaml.
# Usage: real/gpu_check.sh OUT_DIR   (REAL=path/to/ringsim-real, MPIRUN=mpirun, PYTHON=python3 to override;
#        PYTORCH=0 skips the PyTorch rates)
set -u
out=${1:?usage: real/gpu_check.sh OUT_DIR}
mkdir -p "$out"
real=${REAL:-build/bin/ringsim-real}
mpirun=${MPIRUN:-mpirun}
py=${PYTHON:-python3}
cat=(--catalog topologies)
resnet=scenarios/resnet50_imagenet_8x_nc24rs_v3.yaml
bert=scenarios/bert_large_bf16_plan.yaml
step() { echo "=== $*"; local t0=$SECONDS; timeout ${TIMEOUT:-120} "$@"; echo "=== exit $? after $((SECONDS - t0)) s"; }

nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,power.limit --format=csv
nvidia-smi topo -m
for n in 2 4; do
  step "$mpirun" -n $n "$real" "${cat[@]}" bench -b 8 -e 256M -f 4 -n 10 -w 2 --transport cuda-staged \
    --timeout 60 --json "$out/bench_cuda_staged_$n.json"
done
step "$mpirun" -n 4 "$real" "${cat[@]}" bench -b 64K -e 256M -f 16 -n 5 -w 1 --transport cuda-staged \
  --algorithm tree --timeout 60
step "$mpirun" -n 1 "$real" "${cat[@]}" bench -b 8 -e 1G -f 4 -n 20 -w 5 --transport nccl --timeout 60 \
  --json "$out/bench_nccl_1.json"
step "$mpirun" -n 2 "$real" "${cat[@]}" train $resnet --set cluster.nodes=1 --set cluster.gpus_per_node=2 \
  --transport cuda-staged --iterations 3 --warmup 1 --timeout 60 --json "$out/train_resnet50_cuda_staged_2.json"
step "$mpirun" -n 1 "$real" "${cat[@]}" train $resnet --set cluster.nodes=1 --set cluster.gpus_per_node=1 \
  --transport nccl --iterations 3 --warmup 1 --timeout 60 --json "$out/train_resnet50_nccl_1.json"
step "$mpirun" -n 4 "$real" "${cat[@]}" train $bert --set cluster.gpus_per_node=4 --transport cuda-staged \
  --iterations 2 --warmup 1 --timeout 60 --json "$out/train_bert_large_cuda_staged_4.json"
[ "${PYTORCH:-1}" = 0 ] || TIMEOUT=300 step env PYTHONUNBUFFERED=1 "$py" real/single_gpu_rates.py --seconds 2 --json "$out/single_gpu_rates.json" \
  --config resnet50:fp32:256 --config resnet50:tf32:256 --config resnet50:amp:256 --config resnet50:bf16:256 \
  --config bert_large:tf32:64 --config bert_large:amp:64 --config bert_large:bf16:64 --config bert_base:bf16:64 \
  --config gpt2:bf16:8 --config gpt2_xl:bf16:4 --config vit_b16:bf16:128 --config vit_b16:tf32:128 \
  --layers resnet50:fp32:256 --layers resnet50:bf16:256 --layers bert_large:bf16:64

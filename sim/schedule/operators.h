// The operator model of one GPU's training step: the model's layers as the kernels a framework runs (matmuls
// and convolutions with their shapes, attention, normalisation and element-wise passes, the optimizer's
// update), each priced by what the GPU achieves for its kind (compute.yaml `operators`): a matmul at the
// larger of its arithmetic at the GPU's achievable matmul rate and its bytes at the achievable memory
// bandwidth, a memory-bound kernel at its bytes, and no kernel faster than the stack issues kernels.
#pragma once

#include <string>
#include <vector>

#include "load/catalog.h"

namespace ringsim {

struct Kernel {
  bool matmul = false;
  double m = 0, n = 0, k = 0;  // a matmul's output (m x n) and reduction (k), each of `batch` products
  double batch = 1;
  double flops = 0;        // all of them (every repeat)
  double bytes = 0;        // read and written, all repeats
  double repeat = 1;       // identical kernels, one after another (may be fractional: an average count)
  bool linear = false;     // a linear layer's matmul, in the precision's linear arithmetic (fp8's FP8)
  bool attention = false;  // fused (flash) attention, at the GPU's rate for it
};

// One layer's kernels (layer: the module path, as ComputeModel's layers).
struct LayerKernels {
  std::string layer;
  std::vector<Kernel> forward, backward;
};

struct StepKernels {
  std::vector<LayerKernels> layers;  // forward order
  std::vector<Kernel> optimizer;     // the update of every parameter
};

// The kernels of one micro-batch of `batch` samples of `tokens` tokens in `precision`, run by `stack`.
StepKernels step_kernels(const ModelSpec& model, int batch, int tokens, const std::string& precision,
                         const StackSpec& stack, const OperatorSpec& operators);

// What one GPU achieves: the precision's peak, the fraction of it large matmuls reach, the memory bandwidth
// memory-bound kernels reach, and the matmul tile shapes are rounded up to.
struct GpuRates {
  double matmul_flops = 0;     // peak x achievable fraction
  double linear_flops = 0;     // the linear layers' matmuls (Kernel::linear): their arithmetic's peak x that fraction
  double attention_flops = 0;  // fused attention (Kernel::attention): the peak x the GPU's fraction for it
  double memory_bytes = 0;     // bytes/s
  double tile = 128;
  double kernel_s = 0;  // the stack's cost of issuing one kernel: no kernel takes less
};
GpuRates gpu_rates(const ComputeSpec& compute, const GpuSpec& gpu, const std::string& precision,
                   const StackSpec& stack);

double kernel_time(const Kernel& k, const GpuRates& r);
double kernels_time(const std::vector<Kernel>& ks, const GpuRates& r);

// Seconds of one micro-batch's forward and backward passes and of the optimizer step.
struct StepTime {
  double forward_s = 0, backward_s = 0, update_s = 0;
  std::vector<double> layer_forward_s, layer_backward_s;  // StepKernels::layers' order
  int kernels = 0;
};
StepTime step_time(const StepKernels& step, const GpuRates& rates);

// The samples per second one GPU trains `model` at (micro-batch `batch`, `tokens` per sample, one update a
// micro-batch) by the operator model, with the stack named (compute.yaml operators.stacks).
double operator_samples_per_sec(const Catalog& catalog, const std::string& gpu, const std::string& model, int batch,
                                int tokens, const std::string& precision, const std::string& stack);

}  // namespace ringsim

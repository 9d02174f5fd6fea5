// Per-layer compute of one training iteration on one GPU: where the iteration's compute time comes from
// (measured rate, scenario figure, or roofline estimate), split over layers by their share of FLOPs.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"
#include "schedule/memory.h"

namespace ringsim {

struct Layer {
  std::string name;          // module path, e.g. "layer1.0.conv1"
  std::vector<int> tensors;  // indices into ModelSpec::tensors, registration order
  double forward_flops = 0;  // per image
  double forward_s = 0;      // per iteration (whole per-GPU batch)
  double backward_s = 0;
};

struct ComputeModel {
  std::vector<Layer> layers;  // forward order
  double forward_s = 0, backward_s = 0;
  double update_s = 0;     // optimizer step on the GPU (allreduce strategies)
  MemoryEstimate memory;   // what each GPU holds (schedule/memory.h)
  double recompute_s = 0;  // a micro-batch's recomputation (activation checkpointing), in its backward pass
  // What the slowest of the synchronous ranks takes more, on average, for its forward and backward pass;
  // included in forward_s, backward_s and the layers' times (0 for one rank).
  double straggler_s = 0;
  // What each GPU takes more because the other GPUs of its node are busy too (Catalog compute
  // co_run_slowdown); included like straggler_s (0 for one GPU per node).
  double co_run_s = 0;
  // Gradient accumulation: the step's first k - 1 micro-batches' forward and backward passes, which precede
  // the last micro-batch's; included in forward_s (0 for k = 1).
  double accumulation_s = 0;
  double iteration_s() const { return forward_s + backward_s + update_s; }
  double single_gpu_images_per_sec = 0;  // without stragglers
  // The operator model's: the backward pass's share of a micro-batch, and each layer's seconds (forward and
  // backward) by name; 0 and empty for other sources (backward_to_forward and FLOPs split them).
  double backward_share = 0;
  std::map<std::string, double> operator_layer_s;
  std::string source;  // "measured", "scenario", "roofline", "operators"
  std::string source_detail;
  // The model's FLOPs per sample (forward and backward: 3 x forward, no recomputation) and the GPU's dense
  // peak at the scenario's precision: a text model's MFU.
  double model_flops_per_sample = 0, peak_flops = 0;
};

// The optimizer step: read parameter and gradient, write parameter, at the GPU's memory bandwidth.
double optimizer_update_s(const ModelSpec& model, const GpuSpec& gpu);

// The expected largest of n independent standard normal variables (0 for n = 1, 1/sqrt(pi) for n = 2).
double expected_max_of_normals(int n);
// The standard normal distribution function, and its inverse at p in (0, 1) (by bisection).
double normal_cdf(double x);
double normal_quantile(double p);

// Throws InputError when the iteration time from a measured rate is shorter than the optimizer step.
// With `stragglers`, every rank's forward and backward pass is the expected slowest rank's: the mean
// times (1 + cv x expected_max_of_normals(ranks)), the ranks being the scenario's GPUs and cv the step's
// and the GPUs' variations together (ComputeSpec::straggler_cv). With several GPUs, the mean is the given
// rate's time times (1 + reference_gpu_score x gpu_to_gpu_cv): the run's GPUs are not the one measured.
ComputeModel build_compute_model(const Catalog& catalog, const Scenario& scenario, bool stragglers = true);

}  // namespace ringsim

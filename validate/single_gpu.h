// `ringsim validate --single-gpu FILE`: the operator model (schedule/operators.h) against public single-GPU
// training rates (validate/data/single_gpu_rates.yaml), leave-one-out: each rate predicted with its stack's
// figures fitted to the stack's other rates, and banded by the other rates' leave-one-out errors.
#pragma once

#include <string>
#include <vector>

#include "load/catalog.h"
#include "validate/validation.h"

namespace ringsim {

struct SingleGpuRate {
  std::string gpu, model, precision, stack, source;
  int batch_per_gpu = 0, tokens = 1;
  int gradient_accumulation = 1;  // micro-batches per optimizer step
  double samples_per_sec = 0;
  int line = 0;
};

std::vector<SingleGpuRate> read_single_gpu_rates(const Catalog& catalog, const std::string& file);

// The stack's free figures (kernel_s, elementwise_kernels) that best predict `rates` (least squares of the
// log error), by alternating golden-section searches within their ranges.
StackSpec fit_stack(const Catalog& catalog, const StackSpec& start, const std::vector<const SingleGpuRate*>& rates);

double operator_prediction(const Catalog& catalog, const SingleGpuRate& r, const StackSpec& stack);
double roofline_prediction(const Catalog& catalog, const SingleGpuRate& r);

ValidationReport validate_single_gpu(const Catalog& catalog, const std::string& file);

}  // namespace ringsim

// `ringsim validate --single-gpu FILE`: the operator model (schedule/operators.h) against public single-GPU
// training rates (topologies/single_gpu_rates.yaml), leave-one-out: each rate predicted with its stack's
// figures fitted to the stack's other rates, and banded by the nearest other rates' leave-one-out errors
// (schedule/compute_evidence.h).
#pragma once

#include <string>
#include <vector>

#include "load/catalog.h"
#include "schedule/compute_evidence.h"
#include "validate/validation.h"

namespace ringsim {

// The stack's free figures (kernel_s, elementwise_kernels) that best predict `rates` (least squares of the
// log error), by alternating golden-section searches within their ranges.
StackSpec fit_stack(const Catalog& catalog, const StackSpec& start, const std::vector<const SingleGpuRate*>& rates);

ValidationReport validate_single_gpu(const Catalog& catalog, const std::string& file);

}  // namespace ringsim

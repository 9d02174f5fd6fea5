// What one GPU holds while it trains: the model's parameters, gradients and optimizer state, the
// activations its backward pass keeps, the framework's communication buffers and a reserve, against the
// GPU's memory; and, where it does not fit, what would make it.
#pragma once

#include <string>
#include <vector>

#include "load/catalog.h"
#include "load/scenario.h"

namespace ringsim {

struct MemoryItem {
  std::string name;  // parameters | gradients | optimizer_state | activations | buffers | reserve
  double bytes = 0;
  std::string detail;  // how it was counted
};

struct MemoryEstimate {
  std::vector<MemoryItem> breakdown;
  double per_gpu_bytes = 0, capacity_bytes = 0;
  double per_gpu_bytes_low = 0, per_gpu_bytes_high = 0;  // the band: the reserve's and allocator's ranges
  double activation_bytes_per_sample = 0;
  bool fits() const { return per_gpu_bytes <= capacity_bytes; }
  std::string advice;  // what would make it fit; empty where it fits
};

MemoryEstimate estimate_memory(const Catalog& catalog, const Scenario& s);

// "61.2 GiB of 80 GiB (77 %)" and, where it does not fit, "does not fit: needs ...".
std::string memory_summary(const MemoryEstimate& m);

}  // namespace ringsim

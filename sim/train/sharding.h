// Sharded data parallelism's units and the all-gathers of one iteration (PyTorch FSDP, ZeRO-3), as the one
// iteration (iteration.h) runs them: before a unit computes, its parameters are all-gathered on their own
// stream, at most two units ahead of the compute (FSDP's limit_all_gathers), and freed after it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "load/catalog.h"
#include "schedule/compute_model.h"

namespace ringsim {

// FSDP's units, as torchtitan and LLM Foundry wrap a transformer: each numbered block of the module tree
// ("model.layers.7", "h.7", "bert.encoder.layer.7", a ResNet's "layer2.3") is a unit; the rest (embeddings,
// the final norm, the output layer) is the root's, which FSDP gathers first and keeps until the step ends.
struct ShardUnit {
  std::string name;          // the block's module path; empty for the root
  std::vector<int> tensors;  // ModelSpec::tensors indices, registration order
  std::int64_t params = 0;
};
// The root first (where it has tensors), then the blocks in registration order.
std::vector<ShardUnit> shard_units(const ModelSpec& m);

// The iteration's all-gathers in the order FSDP issues them: the root's and every block's before its forward
// pass; with `reshard` (full_shard: each block freed after its forward pass) every block's again, last
// first, before its backward pass (FSDP's BACKWARD_PRE prefetch). With `reshard` a block's gather waits
// until the block two places before it in this order has computed and been freed (limit_all_gathers);
// without, nothing is freed before the backward pass and nothing waits. The root is never freed in the step.
struct GatherPlan {
  struct Gather {
    int unit = 0;
    bool backward = false;
    std::uint64_t bytes = 0;  // the unit's parameters as gathered
    int waits_for = -1;       // the gather whose release it waits for; -1: none
  };
  std::vector<ShardUnit> units;
  std::vector<Gather> gathers;
  std::vector<int> unit_of_layer;           // each compute-model layer's unit
  int find(int unit, bool backward) const;  // the gather's index; -1: none
  bool empty() const { return gathers.empty(); }
};
// `param_bytes`: a gathered parameter's bytes (2 under amp or bf16, FSDP's mixed precision; else 4).
GatherPlan gather_plan(const ModelSpec& m, const std::vector<Layer>& layers, bool reshard, int param_bytes);
// DeepSpeed ZeRO's default reduce_bucket_size, in elements (deepspeed/runtime/zero/config.py).
inline constexpr std::uint64_t kZeroReduceBucketElements = 500'000'000;

// One all-gather of every parameter before the forward pass, kept until the step ends: ZeRO-1 and ZeRO-2,
// where each rank steps its shard of the optimizer and the updated parameters are gathered before they
// are used again.
GatherPlan whole_model_gather(const ModelSpec& m, const std::vector<Layer>& layers, int param_bytes);

}  // namespace ringsim

// PyTorch FSDP (Zhao et al., "PyTorch FSDP", VLDB 2023; torch.distributed.fsdp): each unit's parameters
// all-gathered before its forward pass and, under full_shard and hybrid_shard, again before its backward
// pass; each unit's gradients reduce-scattered as its backward pass ends (allreduced under no_shard; under
// hybrid_shard inside the node, then allreduced across the nodes), on a stream of their own,
// in unit order, without negotiation; every rank steps its optimizer on its shard.
#include "load/scenario.h"
#include "train/framework.h"

namespace ringsim {
namespace {

class Fsdp final : public ShardedFramework {
 public:
  Fsdp(const Scenario& s, const ModelSpec& m)
      : sharding_(s.communication.sharding),
        param_bytes_(compute_element_bytes(s.model.precision)),
        sharded_(state_shards(s) > 1),
        units_(shard_units(m)) {}
  std::string_view name() const override { return "fsdp"; }
  // One buffer a unit, in the order their backward passes end: the blocks last first, then the root, whose
  // embedding's gradient comes last.
  collective::FusionPlanner planner(std::vector<collective::FusionTensor> tensors, int ranks) const override {
    std::vector<std::vector<int>> buckets;
    for (auto u = units_.rbegin(); u != units_.rend(); ++u)
      if (!u->name.empty()) buckets.push_back(u->tensors);
    if (!units_.empty() && units_.front().name.empty()) buckets.push_back(units_.front().tensors);
    return collective::FusionPlanner(std::move(tensors), std::move(buckets), ranks);
  }
  collective::BusOp gradient_op() const override {
    return sharded() ? collective::BusOp::ReduceScatter : collective::BusOp::AllReduce;
  }
  GatherPlan gathers(const ModelSpec& m, const std::vector<Layer>& layers) const override {
    if (!sharded()) return {};
    return gather_plan(m, layers, sharding_ != Sharding::ShardGradOp, param_bytes_);
  }

 private:
  bool sharded() const { return sharded_; }
  Sharding sharding_;
  int param_bytes_;
  bool sharded_;
  std::vector<ShardUnit> units_;
};

}  // namespace

std::unique_ptr<TrainingFramework> make_fsdp(const Scenario& s, const ModelSpec& m) {
  return std::make_unique<Fsdp>(s, m);
}

}  // namespace ringsim

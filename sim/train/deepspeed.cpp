// DeepSpeed's ZeRO (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
// Models", SC'20; DeepSpeed v0.16.5, deepspeed/runtime/zero/stage_1_and_2.py and stage3.py). Gradients in
// buckets of reduce_bucket_size elements, in the model's type, each reduced as backward fills it
// (overlap_comm): stages 1 and 2 allreduce a bucket (use_multi_rank_bucket_allreduce, each rank keeping
// its partitions), stage 3 reduce-scatters it. Each rank steps its shard of the optimizer; under stages 1
// and 2 the updated parameters are all-gathered whole before the next forward pass, under stage 3 each
// block's gathered before its forward and again before its backward pass.
#include "load/scenario.h"
#include "train/framework.h"

namespace ringsim {
namespace {

class Deepspeed final : public ShardedFramework {
 public:
  explicit Deepspeed(const Scenario& s)
      : stage_(s.communication.zero_stage),
        param_bytes_(compute_element_bytes(s.model.precision)),
        bucket_bytes_(kZeroReduceBucketElements * static_cast<std::uint64_t>(s.model.gradient_bytes)),
        sharded_(state_shards(s) > 1) {}
  std::string_view name() const override { return "deepspeed"; }
  // The gradients in buckets in reverse registration order, each reduced once it is full.
  collective::FusionPlanner planner(std::vector<collective::FusionTensor> tensors, int ranks) const override {
    auto buckets = collective::ddp_buckets(tensors, bucket_bytes_, bucket_bytes_);
    return collective::FusionPlanner(std::move(tensors), std::move(buckets), ranks);
  }
  collective::BusOp gradient_op() const override {
    return sharded_ && stage_ == 3 ? collective::BusOp::ReduceScatter : collective::BusOp::AllReduce;
  }
  GatherPlan gathers(const ModelSpec& m, const std::vector<Layer>& layers) const override {
    if (!sharded_) return {};
    return stage_ == 3 ? gather_plan(m, layers, true, param_bytes_) : whole_model_gather(m, layers, param_bytes_);
  }

 private:
  int stage_, param_bytes_;
  std::uint64_t bucket_bytes_;
  bool sharded_;
};

}  // namespace

std::unique_ptr<TrainingFramework> make_deepspeed(const Scenario& s) { return std::make_unique<Deepspeed>(s); }

}  // namespace ringsim

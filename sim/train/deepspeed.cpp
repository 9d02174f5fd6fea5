// DeepSpeed's ZeRO (Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
// Models", SC'20; DeepSpeed v0.16.5, deepspeed/runtime/zero/stage_1_and_2.py and stage3.py). Gradients in
// buckets of reduce_bucket_size elements, in the model's type: with overlap_comm each reduced on a side
// stream as backward fills it; without it (the default at stages 1 and 2) reduced with the compute stalled,
// here once backward is over, in registration order (stage 1's reduce_gradients after backward; stage 2's
// hooks reduce on the compute stream, which waits as long). Stages 1 and 2 allreduce a bucket
// (use_multi_rank_bucket_allreduce, each rank keeping its partitions), stage 3 reduce-scatters it. Each rank steps its
// shard of the optimizer; under stages 1 and 2 the updated parameters are all-gathered whole before the next forward
// pass, under stage 3 each block's gathered before its forward and again before its backward pass.
#include "load/scenario.h"
#include "train/framework.h"

namespace ringsim {
namespace {

// The buckets in registration order, each closing at `bytes` (a type per bucket): the first holds the
// gradient that backward produces last, so none is released before backward is over.
std::vector<std::vector<int>> after_backward_buckets(const std::vector<collective::FusionTensor>& tensors,
                                                     std::uint64_t bytes) {
  std::vector<std::vector<int>> out;
  std::uint64_t filled = 0;
  for (int t = 0; t < static_cast<int>(tensors.size()); ++t) {
    const bool same_type = !out.empty() && tensors[out.back().back()].element_bytes == tensors[t].element_bytes;
    if (out.empty() || !same_type || filled >= bytes) {
      out.emplace_back();
      filled = 0;
    }
    out.back().push_back(t);
    filled += tensors[t].bytes;
  }
  return out;
}

class Deepspeed final : public ShardedFramework {
 public:
  explicit Deepspeed(const Scenario& s)
      : stage_(s.communication.zero_stage),
        param_bytes_(compute_element_bytes(s.model.precision)),
        bucket_bytes_(kZeroReduceBucketElements * static_cast<std::uint64_t>(s.model.gradient_bytes)),
        sharded_(state_shards(s) > 1),
        overlap_(s.communication.overlap_comm) {}
  std::string_view name() const override { return "deepspeed"; }
  // The gradients in buckets in reverse registration order, each reduced once it is full; without the
  // overlap, in registration order once backward is over.
  collective::FusionPlanner planner(std::vector<collective::FusionTensor> tensors, int ranks) const override {
    auto buckets = overlap_ ? collective::ddp_buckets(tensors, bucket_bytes_, bucket_bytes_)
                            : after_backward_buckets(tensors, bucket_bytes_);
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
  bool sharded_, overlap_;
};

}  // namespace

std::unique_ptr<TrainingFramework> make_deepspeed(const Scenario& s) { return std::make_unique<Deepspeed>(s); }

}  // namespace ringsim

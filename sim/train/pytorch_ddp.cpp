// PyTorch DDP's Reducer: gradients in fixed buckets in reverse registration order (first_bucket_size,
// then bucket_size), each allreduced as soon as the rank's own bucket is full, in bucket order (which
// keeps the ranks in step without agreeing); gradients copied into their buckets and back out unless
// gradient_as_bucket_view; one GPU trains without DDP.
#include "load/scenario.h"
#include "train/framework.h"

namespace ringsim {
namespace {

class PytorchDdp final : public TrainingFramework {
 public:
  explicit PytorchDdp(const Scenario& s)
      : first_(static_cast<std::uint64_t>(s.communication.first_bucket_bytes)),
        bucket_(static_cast<std::uint64_t>(s.communication.bucket_bytes)),
        copies_(ddp_copies_buckets(s)),
        servers_(s.communication.strategy == Strategy::ParameterServer) {}
  std::string_view name() const override { return "pytorch_ddp"; }
  collective::FusionPlanner planner(std::vector<collective::FusionTensor> tensors, int ranks) const override {
    auto buckets = collective::ddp_buckets(tensors, first_, bucket_);
    return collective::FusionPlanner(std::move(tensors), std::move(buckets), ranks);
  }
  bool agrees_readiness() const override { return false; }
  bool fusion_copies(const collective::FusionBuffer&) const override { return false; }
  bool bucket_copies() const override { return copies_; }
  bool optimizer_step() const override { return !servers_; }

 private:
  std::uint64_t first_, bucket_;
  bool copies_, servers_;
};

}  // namespace

std::unique_ptr<TrainingFramework> make_pytorch_ddp(const Scenario& s) { return std::make_unique<PytorchDdp>(s); }

}  // namespace ringsim

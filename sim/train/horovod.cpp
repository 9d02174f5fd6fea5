// Horovod (and TensorFlow's parameter servers under it): gradients fused into buffers of at most
// fusion_threshold bytes, negotiated every cycle among all ranks, copied into and out of the fusion buffer
// when a buffer holds more than one tensor; workers step their optimizer unless servers apply the update.
#include "load/scenario.h"
#include "train/framework.h"

namespace ringsim {
namespace {

class Horovod final : public TrainingFramework {
 public:
  explicit Horovod(const Scenario& s)
      : threshold_(static_cast<std::uint64_t>(s.communication.fusion_threshold_bytes)),
        servers_(s.communication.strategy == Strategy::ParameterServer) {}
  std::string_view name() const override { return "horovod"; }
  collective::FusionPlanner planner(std::vector<collective::FusionTensor> tensors, int ranks) const override {
    return collective::FusionPlanner(std::move(tensors), threshold_, ranks);
  }
  bool agrees_readiness() const override { return true; }
  bool fusion_copies(const collective::FusionBuffer& b) const override { return b.tensors.size() > 1; }
  bool bucket_copies() const override { return false; }
  bool optimizer_step() const override { return !servers_; }

 private:
  std::uint64_t threshold_;
  bool servers_;
};

}  // namespace

std::unique_ptr<TrainingFramework> make_horovod(const Scenario& s) { return std::make_unique<Horovod>(s); }

}  // namespace ringsim

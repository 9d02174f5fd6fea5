// Horovod-style Tensor Fusion. Gradients are announced as they become ready on each rank; a tensor is
// ready for a collective once every rank has announced it. Every cycle the coordinator negotiates: the
// ready tensors not yet handled, in the order they became ready, are packed into fusion buffers of at
// most `threshold` bytes (same element type; a tensor larger than the threshold travels alone; threshold
// 0 disables fusion), one collective per buffer.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringsim::collective {

struct FusionTensor {
  std::uint64_t bytes = 0;
  int element_bytes = 4;  // tensors of different element types are never fused together
};

struct FusionBuffer {
  std::vector<int> tensors;  // tensor indices, in the order they were packed
  std::uint64_t bytes = 0;
  int element_bytes = 4;
  double negotiated_at = 0;  // the cycle in which the buffer was formed
};

class FusionPlanner {
 public:
  FusionPlanner(std::vector<FusionTensor> tensors, std::uint64_t threshold, int ranks);

  // Rank announces tensor `t` ready at `time` (times must not decrease across calls).
  void announce(int t, double time);
  // One negotiation cycle at `now`: the buffers to run, in order.
  std::vector<FusionBuffer> negotiate(double now);
  // When every rank had announced `t` (valid once ready).
  double ready_time(int t) const { return ready_at_[t]; }
  bool all_planned() const { return planned_ == static_cast<int>(tensors_.size()); }
  bool has_ready() const { return !ready_queue_.empty(); }  // ready tensors wait for a negotiation
  int tensor_count() const { return static_cast<int>(tensors_.size()); }

 private:
  std::vector<FusionTensor> tensors_;
  std::uint64_t threshold_;
  int ranks_;
  std::vector<int> announced_;
  std::vector<double> ready_at_;
  std::vector<int> ready_queue_;  // ready, not yet planned, in order of readiness
  int planned_ = 0;
};

}  // namespace ringsim::collective

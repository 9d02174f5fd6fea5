// Horovod-style Tensor Fusion. Gradients are announced as they become ready on each rank; a tensor is
// ready for a collective once every rank has announced it. Every cycle the coordinator negotiates: the
// ready tensors not yet handled, in the order they became ready, are packed into fusion buffers of at
// most `threshold` bytes (same element type; a tensor larger than the threshold travels alone; threshold
// 0 disables fusion), one collective per buffer.
// PyTorch DDP's buckets instead are fixed before the step (ddp_buckets): a bucket's allreduce starts once
// every rank has all its gradients and every earlier bucket has started (the Reducer launches in order).
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

// DDP's bucket assignment (torch/csrc/distributed/c10d/reducer.cpp compute_bucket_assignment_by_size, as
// Reducer::rebuild_buckets calls it after the first step): the tensors in reverse registration order (the
// order backward produces them), a bucket closing once it holds at least its limit: `first_bytes` for the
// first, `bytes` for each after. Tensors of different element types go to different buckets.
std::vector<std::vector<int>> ddp_buckets(const std::vector<FusionTensor>& tensors, std::uint64_t first_bytes,
                                          std::uint64_t bytes);

// PyTorch DDP's copies out of its buckets (Reducer::finalize_backward, gradient_as_bucket_view false): on the
// compute stream once the backward pass ends at `backward_end`, bucket by bucket in order, each after its
// allreduce (`allreduce_end`) and the copy before it. When the last copy ends.
double bucket_copies_end(double backward_end, const std::vector<double>& allreduce_end,
                         const std::vector<double>& copy_s, std::vector<double>* starts = nullptr);

class FusionPlanner {
 public:
  FusionPlanner(std::vector<FusionTensor> tensors, std::uint64_t threshold, int ranks);
  // Fixed buckets (ddp_buckets), released in their order as each completes.
  FusionPlanner(std::vector<FusionTensor> tensors, std::vector<std::vector<int>> buckets, int ranks);

  // Rank announces tensor `t` ready at `time` (times must not decrease across calls).
  void announce(int t, double time);
  // One negotiation cycle at `now`: the buffers to run, in order.
  std::vector<FusionBuffer> negotiate(double now);
  // When every rank had announced `t` (valid once ready).
  double ready_time(int t) const { return ready_at_[t]; }
  bool all_planned() const { return planned_ == static_cast<int>(tensors_.size()); }
  // A negotiation now would plan something: ready tensors (fusion), the next bucket complete (buckets).
  bool has_ready() const;
  int tensor_count() const { return static_cast<int>(tensors_.size()); }

 private:
  std::vector<FusionTensor> tensors_;
  std::uint64_t threshold_;
  int ranks_;
  std::vector<int> announced_;
  std::vector<double> ready_at_;
  std::vector<int> ready_queue_;  // ready, not yet planned, in order of readiness
  int planned_ = 0;
  std::vector<std::vector<int>> buckets_;  // fixed buckets; empty: fusion by threshold
  std::vector<int> bucket_missing_;        // per bucket: its tensors not yet ready on every rank
  std::vector<int> bucket_of_;             // per tensor
  std::size_t next_bucket_ = 0;
  std::vector<FusionBuffer> release_buckets(double now);
};

}  // namespace ringsim::collective

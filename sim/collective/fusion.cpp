#include "collective/fusion.h"

#include <stdexcept>

namespace ringsim::collective {

FusionPlanner::FusionPlanner(std::vector<FusionTensor> tensors, std::uint64_t threshold, int ranks)
    : tensors_(std::move(tensors)),
      threshold_(threshold),
      ranks_(ranks),
      announced_(tensors_.size(), 0),
      ready_at_(tensors_.size(), 0) {
  if (ranks < 1) throw std::invalid_argument("fusion planner: ranks must be >= 1");
}

void FusionPlanner::announce(int t, double time) {
  if (announced_.at(t) >= ranks_) throw std::logic_error("tensor announced more often than there are ranks");
  if (++announced_[t] == ranks_) {
    ready_at_[t] = time;
    ready_queue_.push_back(t);
  }
}

std::vector<FusionBuffer> FusionPlanner::negotiate(double now) {
  std::vector<FusionBuffer> out;
  for (int t : ready_queue_) {
    const FusionTensor& ft = tensors_[t];
    FusionBuffer* cur = out.empty() ? nullptr : &out.back();
    const bool fits =
        cur && threshold_ > 0 && cur->element_bytes == ft.element_bytes && cur->bytes + ft.bytes <= threshold_;
    if (!fits) {
      out.push_back({{}, 0, ft.element_bytes, now});
      cur = &out.back();
    }
    cur->tensors.push_back(t);
    cur->bytes += ft.bytes;
  }
  planned_ += static_cast<int>(ready_queue_.size());
  ready_queue_.clear();
  return out;
}

}  // namespace ringsim::collective

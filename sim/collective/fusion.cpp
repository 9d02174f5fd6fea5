#include "collective/fusion.h"

#include <algorithm>
#include <map>
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

double bucket_copies_end(double backward_end, const std::vector<double>& allreduce_end,
                         const std::vector<double>& copy_s, std::vector<double>* starts) {
  if (allreduce_end.size() != copy_s.size()) throw std::invalid_argument("bucket copies: one copy per allreduce");
  double t = backward_end;
  for (std::size_t i = 0; i < copy_s.size(); ++i) {
    t = std::max(t, allreduce_end[i]);
    if (starts) starts->push_back(t);
    t += copy_s[i];
  }
  return t;
}

std::vector<std::vector<int>> ddp_buckets(const std::vector<FusionTensor>& tensors, std::uint64_t first_bytes,
                                          std::uint64_t bytes) {
  struct Open {
    std::vector<int> tensors;
    std::uint64_t bytes = 0;
    bool first = true;  // this element type's next bucket is its first
  };
  std::map<int, Open> open;  // by element type
  std::vector<std::vector<int>> out;
  for (int t = static_cast<int>(tensors.size()) - 1; t >= 0; --t) {
    Open& b = open[tensors[t].element_bytes];
    b.tensors.push_back(t);
    b.bytes += tensors[t].bytes;
    if (b.bytes >= (b.first ? first_bytes : bytes)) {
      out.push_back(std::move(b.tensors));
      b = Open{{}, 0, false};
    }
  }
  for (auto& [type, b] : open)
    if (!b.tensors.empty()) out.push_back(std::move(b.tensors));
  // In order of their first tensor's readiness: the reverse registration order's position.
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.front() > b.front(); });
  return out;
}

FusionPlanner::FusionPlanner(std::vector<FusionTensor> tensors, std::vector<std::vector<int>> buckets, int ranks)
    : FusionPlanner(std::move(tensors), 0, ranks) {
  buckets_ = std::move(buckets);
  bucket_of_.assign(tensors_.size(), -1);
  for (std::size_t b = 0; b < buckets_.size(); ++b) {
    bucket_missing_.push_back(static_cast<int>(buckets_[b].size()));
    for (int t : buckets_[b]) {
      if (bucket_of_.at(t) >= 0) throw std::invalid_argument("fusion planner: a tensor in two buckets");
      bucket_of_[t] = static_cast<int>(b);
    }
  }
  for (int b : bucket_of_)
    if (b < 0) throw std::invalid_argument("fusion planner: a tensor in no bucket");
}

void FusionPlanner::announce(int t, double time) {
  if (announced_.at(t) >= ranks_) throw std::logic_error("tensor announced more often than there are ranks");
  if (++announced_[t] == ranks_) {
    ready_at_[t] = time;
    if (buckets_.empty())
      ready_queue_.push_back(t);
    else
      --bucket_missing_[bucket_of_[t]];
  }
}

bool FusionPlanner::has_ready() const {
  if (buckets_.empty()) return !ready_queue_.empty();
  return next_bucket_ < buckets_.size() && bucket_missing_[next_bucket_] == 0;
}

std::vector<FusionBuffer> FusionPlanner::release_buckets(double now) {
  std::vector<FusionBuffer> out;
  for (; has_ready(); ++next_bucket_) {
    FusionBuffer b{buckets_[next_bucket_], 0, tensors_[buckets_[next_bucket_].front()].element_bytes, now};
    for (int t : b.tensors) b.bytes += tensors_[t].bytes;
    planned_ += static_cast<int>(b.tensors.size());
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<FusionBuffer> FusionPlanner::negotiate(double now) {
  if (!buckets_.empty()) return release_buckets(now);
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

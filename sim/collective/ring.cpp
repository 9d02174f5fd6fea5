// The ring allreduce (one ring per channel, as NCCL runs several), and its two halves on their own.
#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "collective/algorithm_steps.h"
#include "collective/collective.h"

namespace ringsim::collective {

namespace {

using detail::PhasedCollective;
using detail::ring_allreduce_step;
using detail::staging_step;

enum class RingPart { Allreduce, ReduceScatter, Allgather };

class RingAllreduce final : public PhasedCollective {
 public:
  // One ring per channel: channel c reduces its contiguous share of the buffer along orders[c].
  RingAllreduce(int p, std::uint64_t bytes, int element_bytes, Space space, RingPart part,
                std::vector<std::vector<int>> orders)
      : PhasedCollective(bytes, p, space),
        p_(p),
        part_(part),
        channel_split_(bytes, std::max<int>(1, static_cast<int>(orders.size())), element_bytes) {
    if (orders.empty()) throw std::invalid_argument("ring: at least one channel");
    for (std::size_t c = 0; c < orders.size(); ++c) {
      Ring r{std::move(orders[c]), {}, Chunking(channel_split_.size(static_cast<int>(c)), p, element_bytes)};
      if (r.order.empty())
        for (int i = 0; i < p; ++i) r.order.push_back(i);
      if (static_cast<int>(r.order.size()) != p) throw std::invalid_argument("ring order: one position per member");
      r.pos.assign(p, -1);
      for (int i = 0; i < p; ++i) {
        if (r.order[i] < 0 || r.order[i] >= p || r.pos[r.order[i]] >= 0)
          throw std::invalid_argument("ring order: not a permutation of the members");
        r.pos[r.order[i]] = i;
      }
      rings_.push_back(std::move(r));
    }
    const bool staged = space == Space::Host && p > 1;
    if (staged) phases_.add(Phase::CopyToHost, 1);
    if (part != RingPart::Allgather) phases_.add(Phase::ReduceScatter, p - 1);
    if (part != RingPart::ReduceScatter) phases_.add(Phase::Allgather, p - 1);
    if (staged) phases_.add(Phase::CopyToDevice, 1);
  }
  std::string_view algorithm() const override {
    return part_ == RingPart::Allreduce       ? "ring_allreduce"
           : part_ == RingPart::ReduceScatter ? "ring_reduce_scatter"
                                              : "ring_allgather";
  }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    auto [phase, i] = phases_.locate(s);
    if (stages_share(phase)) return stage_share(phase, m, out);
    if (staging_step(phase, m, bytes_, out)) return;
    const int ring_step = phase == Phase::ReduceScatter ? i : (p_ - 1) + i;
    for (std::size_t c = 0; c < rings_.size(); ++c) {
      const Ring& r = rings_[c];
      ring_allreduce_step(
          r.pos[m], p_, ring_step, r.chunks, space_, [&r](int k) { return r.order[k]; }, out,
          channel_split_.offset(static_cast<int>(c)));
    }
  }

 private:
  // A half stages what it reads and writes: a reduce-scatter copies in the buffer and out the member's
  // chunk of each channel's share, an allgather those chunks in and the buffer out.
  bool stages_share(Phase phase) const {
    return (part_ == RingPart::ReduceScatter && phase == Phase::CopyToDevice) ||
           (part_ == RingPart::Allgather && phase == Phase::CopyToHost);
  }
  void stage_share(Phase phase, int m, RankStep& out) const {
    const Space from = phase == Phase::CopyToHost ? Space::Device : Space::Host;
    const Space to = from == Space::Host ? Space::Device : Space::Host;
    for (std::size_t c = 0; c < rings_.size(); ++c) {
      const Ring& r = rings_[c];
      const int chunk = ring_chunk_owned(r.pos[m], p_);
      const Transfer t{
          m,    m, from, to, channel_split_.offset(static_cast<int>(c)) + r.chunks.offset(chunk), r.chunks.size(chunk),
          false};
      out.sends.push_back(t);
      out.recvs.push_back(t);
    }
  }
  struct Ring {
    std::vector<int> order, pos;  // ring position -> member, member -> ring position
    Chunking chunks;              // the channel's share in p chunks
  };
  int p_;
  RingPart part_;
  Chunking channel_split_;  // the buffer in one share per channel
  std::vector<Ring> rings_;
};

}  // namespace

std::unique_ptr<Collective> make_ring_allreduce(int members, std::uint64_t bytes, int element_bytes, Space space,
                                                const std::vector<int>& order) {
  return make_ring_allreduce(members, bytes, element_bytes, space, std::vector<std::vector<int>>{order});
}

std::unique_ptr<Collective> make_ring_allreduce(int members, std::uint64_t bytes, int element_bytes, Space space,
                                                const std::vector<std::vector<int>>& orders) {
  if (members < 1) throw std::invalid_argument("ring allreduce needs at least one member");
  return std::make_unique<RingAllreduce>(members, bytes, element_bytes, space, RingPart::Allreduce, orders);
}

std::unique_ptr<Collective> make_ring_reduce_scatter(int members, std::uint64_t bytes, int element_bytes) {
  return make_ring_reduce_scatter(members, bytes, element_bytes, Space::Device, std::vector<std::vector<int>>(1));
}

std::unique_ptr<Collective> make_ring_allgather(int members, std::uint64_t bytes, int element_bytes) {
  return make_ring_allgather(members, bytes, element_bytes, Space::Device, std::vector<std::vector<int>>(1));
}

std::unique_ptr<Collective> make_ring_reduce_scatter(int members, std::uint64_t bytes, int element_bytes, Space space,
                                                     const std::vector<std::vector<int>>& orders) {
  if (members < 1) throw std::invalid_argument("ring reduce-scatter needs at least one member");
  return std::make_unique<RingAllreduce>(members, bytes, element_bytes, space, RingPart::ReduceScatter, orders);
}

std::unique_ptr<Collective> make_ring_allgather(int members, std::uint64_t bytes, int element_bytes, Space space,
                                                const std::vector<std::vector<int>>& orders) {
  if (members < 1) throw std::invalid_argument("ring allgather needs at least one member");
  return std::make_unique<RingAllreduce>(members, bytes, element_bytes, space, RingPart::Allgather, orders);
}

}  // namespace ringsim::collective

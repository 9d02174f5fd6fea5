// The hierarchical allreduce: within each node, across the nodes' local roots, within each node again.
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "collective/algorithm_steps.h"
#include "collective/collective.h"

namespace ringsim::collective {

namespace {

using detail::add_halving_doubling_phases;
using detail::halving_doubling_step;
using detail::HalvingDoubling;
using detail::mod;
using detail::PhasedCollective;
using detail::ring_allreduce_step;
using detail::staging_step;

// A cross-node phase of the hierarchical allreduce as the halving-doubling phase its roots run.
Phase uncrossed(Phase p) {
  switch (p) {
    case Phase::CrossFold:
      return Phase::Fold;
    case Phase::CrossReduceScatter:
      return Phase::ReduceScatter;
    case Phase::CrossAllgather:
      return Phase::Allgather;
    case Phase::CrossUnfold:
      return Phase::Unfold;
    default:
      return p;
  }
}

class HierarchicalAllreduce final : public PhasedCollective {
 public:
  HierarchicalAllreduce(int nodes, int local, std::uint64_t bytes, int element_bytes, Space space,
                        std::vector<int> local_order, CrossNode cross)
      : PhasedCollective(bytes, nodes * local, space),
        nodes_(nodes),
        local_(local),
        cross_(cross),
        hd_(nodes),
        local_chunks_(bytes, local, element_bytes),
        node_chunks_(bytes, cross == CrossNode::Ring ? nodes : hd_.p2, element_bytes),
        lorder_(std::move(local_order)) {
    if (lorder_.empty())
      for (int i = 0; i < local; ++i) lorder_.push_back(i);
    lpos_.assign(local, -1);
    if (static_cast<int>(lorder_.size()) != local || lorder_[0] != 0)
      throw std::invalid_argument("local ring order: one position per local member, starting with 0");
    for (int i = 0; i < local; ++i) {
      if (lorder_[i] < 0 || lorder_[i] >= local || lpos_[lorder_[i]] >= 0)
        throw std::invalid_argument("local ring order: not a permutation");
      lpos_[lorder_[i]] = i;
    }
    const bool staged = space == Space::Host && nodes * local > 1;
    if (staged) phases_.add(Phase::CopyToHost, 1);
    phases_.add(Phase::LocalReduceScatter, local - 1);
    for (int j = 0; j + 1 < local; ++j) phases_.add(Phase::LocalGather, 1, j);  // each step its own pairs
    if (cross == CrossNode::Ring) {
      phases_.add(Phase::CrossReduceScatter, nodes - 1);
      phases_.add(Phase::CrossAllgather, nodes - 1);
    } else {
      add_halving_doubling_phases(phases_, hd_, Phase::CrossFold, Phase::CrossReduceScatter, Phase::CrossAllgather,
                                  Phase::CrossUnfold);
    }
    for (int j = 0; j + 1 < local; ++j) phases_.add(Phase::LocalScatter, 1, j);
    phases_.add(Phase::LocalAllgather, local - 1);
    if (staged) phases_.add(Phase::CopyToDevice, 1);
  }
  std::string_view algorithm() const override {
    return cross_ == CrossNode::Ring ? "hierarchical_allreduce" : "hierarchical_halving_doubling_allreduce";
  }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    auto [phase, i] = phases_.locate(s);
    const int node = m / local_, L = local_;
    const int l = lpos_[m % local_];  // position in the node's ring
    auto local_member = [&](int k) { return node * L + lorder_[k]; };
    if (staging_step(phase, m, bytes_, out)) return;
    if (phase == Phase::LocalReduceScatter)
      return ring_allreduce_step(l, L, i, local_chunks_, space_, local_member, out);
    if (phase == Phase::LocalAllgather)
      return ring_allreduce_step(l, L, (L - 1) + i, local_chunks_, space_, local_member, out);
    if (phase == Phase::LocalGather || phase == Phase::LocalScatter) {
      // After the local reduce-scatter, ring position k holds chunk (k + 1) mod L. The gather brings every
      // chunk to position 0 along the ring (k -> k+1 -> ... -> 0), pipelined: in step j position p forwards
      // the chunk of position p - j. The scatter leaves position 0 the same way round, the farthest chunk
      // first: in step j position p passes on the chunk for position L-1-j+p. As NCCL's ring reduce and
      // broadcast, every hop is a ring link.
      const bool gather = phase == Phase::LocalGather;
      const int j = i;  // clang 14 cannot capture a structured binding
      auto chunk_transfer = [&](int from_pos, int owner_pos) {
        const int c = mod(owner_pos + 1, L);
        return Transfer{local_member(from_pos),
                        local_member(mod(from_pos + 1, L)),
                        space_,
                        space_,
                        local_chunks_.offset(c),
                        local_chunks_.size(c),
                        false};
      };
      auto owner = [&](int p) { return gather ? p - j : L - 1 - j + p; };  // whose chunk position p sends
      auto sends = [&](int p) { return gather ? p - j >= 1 : p <= j; };    // position p sends in step j
      if (sends(l)) out.sends.push_back(chunk_transfer(l, owner(l)));
      const int prev = mod(l - 1, L);
      if (sends(prev)) out.recvs.push_back(chunk_transfer(prev, owner(prev)));
      return;
    }
    // Cross-node ring (or halving-doubling) among the local roots.
    if (l != 0) return;
    if (cross_ == CrossNode::HalvingDoubling)
      return halving_doubling_step(
          hd_, node, uncrossed(phase), i, node_chunks_, space_, [&](int k) { return k * L; }, out);
    const int ring_step = phase == Phase::CrossReduceScatter ? i : (nodes_ - 1) + i;
    ring_allreduce_step(
        node, nodes_, ring_step, node_chunks_, space_, [&](int k) { return k * L; }, out);
  }

 private:
  int nodes_, local_;
  CrossNode cross_;
  HalvingDoubling hd_;
  Chunking local_chunks_, node_chunks_;
  std::vector<int> lorder_, lpos_;  // ring position -> local index, local index -> ring position
};

}  // namespace

std::unique_ptr<Collective> make_hierarchical_allreduce(int nodes, int local, std::uint64_t bytes, int element_bytes,
                                                        Space space, const std::vector<int>& local_order,
                                                        CrossNode cross) {
  if (nodes < 1 || local < 1) throw std::invalid_argument("hierarchical allreduce needs nodes, local >= 1");
  return std::make_unique<HierarchicalAllreduce>(nodes, local, bytes, element_bytes, space, local_order, cross);
}

}  // namespace ringsim::collective

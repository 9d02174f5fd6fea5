// What the collective algorithms share (ring.cpp, halving_doubling.cpp, hierarchical.cpp, tree.cpp, nvls.cpp):
// the ring's and halving-doubling's steps, the host data path's staging copies, collectives laid out in
// phases, node classes and NCCL's node trees. Internal to sim/collective.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include "collective/collective.h"

namespace ringsim::collective::detail {

inline int mod(int a, int n) { return ((a % n) + n) % n; }

// Step `s` of a ring allreduce among `n` participants (reduce-scatter for s < n-1, then allgather), seen by
// participant `i`; `member(k)` maps participant k to its collective member.
// `base`: where the ring's buffer starts within the member's buffer (a channel's share of it).
template <class MemberOf>
void ring_allreduce_step(int i, int n, int s, const Chunking& ch, Space space, MemberOf member, RankStep& out,
                         std::uint64_t base = 0) {
  const bool scatter = s < n - 1;
  const int t = scatter ? s : s - (n - 1);
  const int send_chunk = scatter ? mod(i - t, n) : mod(i + 1 - t, n);
  const int recv_chunk = scatter ? mod(i - t - 1, n) : mod(i - t, n);
  const int right = member(mod(i + 1, n)), left = member(mod(i - 1, n)), me = member(i);
  out.sends.push_back({me, right, space, space, base + ch.offset(send_chunk), ch.size(send_chunk), scatter});
  out.recvs.push_back({left, me, space, space, base + ch.offset(recv_chunk), ch.size(recv_chunk), scatter});
}

// Recursive halving and doubling (Rabenseifner) among `n` participants: with P the largest power of two
// <= n and r = n - P, the first 2r participants pair up and the even one folds its buffer into the odd
// one ("fold"); the P remaining participants reduce-scatter by recursive halving (log2 P steps: exchange
// half of the current segment with the participant 2^j away, keep and reduce the other half) and
// allgather by recursive doubling; the odd ones hand the result back ("unfold"). `ch` splits the buffer
// into P chunks; virtual rank v ends the reduce-scatter owning chunk v.
struct HalvingDoubling {
  int n = 1, p2 = 1, log2p = 0, extra = 0;  // participants, P, log2 P, r
  explicit HalvingDoubling(int participants) : n(participants) {
    while (p2 * 2 <= n) {
      p2 *= 2;
      ++log2p;
    }
    extra = n - p2;
  }
  // Participant -> virtual rank in the power-of-two group, -1 for those folded away.
  int virtual_rank(int i) const {
    if (i < 2 * extra) return i % 2 == 1 ? i / 2 : -1;
    return i - extra;
  }
  int participant(int v) const { return v < extra ? 2 * v + 1 : v + extra; }
};

template <class MemberOf>
void halving_doubling_step(const HalvingDoubling& hd, int i, Phase phase, int k, const Chunking& ch, Space space,
                           MemberOf member, RankStep& out) {
  const int me = member(i);
  const std::uint64_t all = ch.offset(hd.p2);
  if (phase == Phase::Fold || phase == Phase::Unfold) {
    if (i >= 2 * hd.extra) return;
    const bool fold = phase == Phase::Fold;
    const bool sender = fold ? i % 2 == 0 : i % 2 == 1;
    const int peer = member(sender == fold ? i + 1 : i - 1);
    const Transfer t =
        sender ? Transfer{me, peer, space, space, 0, all, fold} : Transfer{peer, me, space, space, 0, all, fold};
    (sender ? out.sends : out.recvs).push_back(t);
    return;
  }
  const int v = hd.virtual_rank(i);
  if (v < 0) return;
  auto range = [&](int first_chunk, int chunks) {
    return std::pair{ch.offset(first_chunk), ch.offset(first_chunk + chunks) - ch.offset(first_chunk)};
  };
  int keep_first = 0, send_first = 0, chunks = 0, peer_v = 0;
  const bool scatter = phase == Phase::ReduceScatter;
  if (scatter) {  // step k: the segment of 2d chunks holding v splits; keep v's half, send the other
    const int d = hd.p2 >> (k + 1), lo = v & ~(2 * d - 1);
    peer_v = v ^ d;
    keep_first = (v & d) ? lo + d : lo;
    send_first = (v & d) ? lo : lo + d;
    chunks = d;
  } else {  // allgather step k: send the 2^k chunks held, receive the partner's 2^k
    const int d = 1 << k;
    peer_v = v ^ d;
    send_first = v & ~(d - 1);
    keep_first = peer_v & ~(d - 1);
    chunks = d;
  }
  const int peer = member(hd.participant(peer_v));
  const auto [send_off, send_bytes] = range(send_first, chunks);
  const auto [recv_off, recv_bytes] = range(keep_first, chunks);
  if (send_bytes > 0) out.sends.push_back({me, peer, space, space, send_off, send_bytes, scatter});
  if (recv_bytes > 0) out.recvs.push_back({peer, me, space, space, recv_off, recv_bytes, scatter});
}

inline void copy_step(int me, std::uint64_t bytes, Space from, Space to, RankStep& out) {
  Transfer t{me, me, from, to, 0, bytes, false};
  out.sends.push_back(t);
  out.recvs.push_back(t);
}

// The host data path's first and last steps: the whole buffer copied device -> host, host -> device.
inline bool staging_step(Phase phase, int m, std::uint64_t bytes, RankStep& out) {
  if (phase == Phase::CopyToHost)
    copy_step(m, bytes, Space::Device, Space::Host, out);
  else if (phase == Phase::CopyToDevice)
    copy_step(m, bytes, Space::Host, Space::Device, out);
  else
    return false;
  return true;
}

// Phases laid out one after another; a phase is a run of identical steps.
struct Phases {
  struct Run {
    Phase name;
    int count;
    int first_index;  // the index within the phase of its first step (a phase split into single steps)
  };
  std::vector<Run> list;
  void add(Phase name, int count, int first_index = 0) {
    if (count > 0) list.push_back({name, count, first_index});
  }
  int steps() const {
    int n = 0;
    for (const auto& p : list) n += p.count;
    return n;
  }
  // Which phase step `s` is in, and its index within the phase.
  std::pair<Phase, int> locate(int s) const {
    for (const auto& p : list) {
      if (s < p.count) return {p.name, p.first_index + s};
      s -= p.count;
    }
    throw std::out_of_range("collective step out of range");
  }
  std::vector<StepRun> runs() const {
    std::vector<StepRun> r;
    int first = 0;
    for (const auto& p : list) {
      r.push_back({first, p.count, p.name});
      first += p.count;
    }
    return r;
  }
};

// The phases of halving-doubling, each step its own run (partners and sizes change every step); the
// phases are the four given (the hierarchical allreduce's are its cross-node ones).
inline void add_halving_doubling_phases(Phases& phases, const HalvingDoubling& hd, Phase fold, Phase scatter,
                                        Phase gather, Phase unfold) {
  if (hd.n < 2) return;
  if (hd.extra > 0) phases.add(fold, 1);
  for (int k = 0; k < hd.log2p; ++k) phases.add(scatter, 1, k);
  for (int k = 0; k < hd.log2p; ++k) phases.add(gather, 1, k);
  if (hd.extra > 0) phases.add(unfold, 1);
}

// A collective laid out in phases: its steps and runs are the phases', and every member keeps its buffer
// in the one data space.
class PhasedCollective : public Collective {
 public:
  int members() const override { return members_; }
  int steps() const override { return phases_.steps(); }
  std::vector<StepRun> runs() const override { return phases_.runs(); }
  Space home_space(int) const override { return space_; }

 protected:
  PhasedCollective(std::uint64_t bytes, int members, Space space)
      : Collective(bytes), members_(members), space_(space) {}
  int members_;
  Space space_;
  Phases phases_;
};

// Node classes by what decides a node's steps: key_of(n, key) appends node n's; nodes with equal keys are alike.
template <class KeyOf>
NodeClasses classes_by_key(int nodes, int local, int extra, KeyOf key_of) {
  std::vector<int> of_node;
  std::map<std::vector<int>, int> seen;
  for (int n = 0; n < nodes; ++n) {
    std::vector<int> key;
    key_of(n, key);
    of_node.push_back(seen.emplace(std::move(key), static_cast<int>(seen.size())).first->second);
  }
  return {local, extra, std::move(of_node)};
}

// Tree `tree` of NCCL's double binary tree over the nodes, with a chain of `local` members below each node's
// head: each node's parent (-1: the root) and children (ascending), its head's height (hops down to its
// deepest leaf, chains included) and depth (hops up to the root).
struct NodeTree {
  std::vector<int> parent, height, depth;
  std::vector<int> child_start, child_list;  // node n's children: child_list[child_start[n], child_start[n + 1])
  int tall = 0;                              // the root's height
  std::span<const int> children(int n) const {
    return {child_list.data() + child_start[n], static_cast<std::size_t>(child_start[n + 1] - child_start[n])};
  }
};

NodeTree node_tree(int nodes, int tree, int local);  // in tree.cpp

}  // namespace ringsim::collective::detail

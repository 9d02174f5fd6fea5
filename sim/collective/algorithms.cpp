#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <numeric>
#include <span>
#include <stdexcept>
#include <utility>

#include "collective/collective.h"

namespace ringsim::collective {

std::string_view to_string(Space s) { return s == Space::Device ? "device" : "host"; }

std::string_view to_string(Phase p) {
  switch (p) {
    case Phase::CopyToHost:
      return "copy_to_host";
    case Phase::CopyToDevice:
      return "copy_to_device";
    case Phase::ReduceScatter:
      return "reduce_scatter";
    case Phase::Allgather:
      return "allgather";
    case Phase::Fold:
      return "fold";
    case Phase::Unfold:
      return "unfold";
    case Phase::LocalReduceScatter:
      return "local_reduce_scatter";
    case Phase::LocalGather:
      return "local_gather";
    case Phase::LocalScatter:
      return "local_scatter";
    case Phase::LocalAllgather:
      return "local_allgather";
    case Phase::CrossReduceScatter:
      return "cross_reduce_scatter";
    case Phase::CrossAllgather:
      return "cross_allgather";
    case Phase::CrossFold:
      return "cross_fold";
    case Phase::CrossUnfold:
      return "cross_unfold";
    case Phase::LocalReduce:
      return "local_reduce";
    case Phase::Push:
      return "push";
    case Phase::Pull:
      return "pull";
    case Phase::InSwitch:
      return "in_switch";
    case Phase::LocalBroadcast:
      return "local_broadcast";
    case Phase::TreeUp:
      return "tree_up";
    case Phase::TreeUpDown:
      return "tree_up_down";
    case Phase::TreeDown:
      return "tree_down";
  }
  return "unknown";
}

NodeClasses::NodeClasses(int local_members, int extra_members, std::vector<int> classes)
    : local(local_members), extra(extra_members), of_node(std::move(classes)) {
  for (int n = 0; n < nodes(); ++n)
    if (of_node[n] == count())
      first.push_back(n);
    else if (of_node[n] < 0 || of_node[n] > count())
      throw std::invalid_argument("node classes: not numbered in order");
}

void Collective::remote_sends(int m, int s, const NodeClasses& nodes, std::vector<Transfer>& out) const {
  RankStep st;
  rank_step(m, s, st);
  out.clear();
  for (const Transfer& t : st.sends)
    if (nodes.node(t.dst) != nodes.node(m)) out.push_back(t);
}

Chunking::Chunking(std::uint64_t bytes, int parts, int element_bytes_) : element_bytes(element_bytes_) {
  if (parts < 1 || element_bytes < 1 || bytes % element_bytes != 0)
    throw std::invalid_argument("chunking: bytes must be a whole number of elements and parts >= 1");
  const std::uint64_t elements = bytes / element_bytes;
  elements_base = elements / parts;
  remainder = elements % parts;
}
std::uint64_t Chunking::offset(int c) const {
  const auto cu = static_cast<std::uint64_t>(c);
  return (cu * elements_base + std::min<std::uint64_t>(cu, remainder)) * element_bytes;
}
std::uint64_t Chunking::size(int c) const {
  return (elements_base + (static_cast<std::uint64_t>(c) < remainder ? 1 : 0)) * element_bytes;
}

namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

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

void copy_step(int me, std::uint64_t bytes, Space from, Space to, RankStep& out) {
  Transfer t{me, me, from, to, 0, bytes, false};
  out.sends.push_back(t);
  out.recvs.push_back(t);
}

// The host data path's first and last steps: the whole buffer copied device -> host, host -> device.
bool staging_step(Phase phase, int m, std::uint64_t bytes, RankStep& out) {
  if (phase == Phase::CopyToHost)
    copy_step(m, bytes, Space::Device, Space::Host, out);
  else if (phase == Phase::CopyToDevice)
    copy_step(m, bytes, Space::Host, Space::Device, out);
  else
    return false;
  return true;
}

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
void add_halving_doubling_phases(Phases& phases, const HalvingDoubling& hd, Phase fold, Phase scatter, Phase gather,
                                 Phase unfold) {
  if (hd.n < 2) return;
  if (hd.extra > 0) phases.add(fold, 1);
  for (int k = 0; k < hd.log2p; ++k) phases.add(scatter, 1, k);
  for (int k = 0; k < hd.log2p; ++k) phases.add(gather, 1, k);
  if (hd.extra > 0) phases.add(unfold, 1);
}

// Steps of a pipeline whose pattern(t) (slice sizes at each stage) is equal form one run.
template <class Pattern>
std::vector<StepRun> runs_by_pattern(int steps, Phase phase, Pattern pattern) {
  std::vector<StepRun> out;
  for (int t = 0; t < steps;) {
    int end = t + 1;
    while (end < steps && pattern(end) == pattern(t)) ++end;
    out.push_back({t, end - t, phase});
    t = end;
  }
  return out;
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
    if (part != RingPart::Allreduce && orders.size() > 1)
      throw std::invalid_argument("ring: channels apply to the allreduce only");
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
  struct Ring {
    std::vector<int> order, pos;  // ring position -> member, member -> ring position
    Chunking chunks;              // the channel's share in p chunks
  };
  int p_;
  RingPart part_;
  Chunking channel_split_;  // the buffer in one share per channel
  std::vector<Ring> rings_;
};

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

class HalvingDoublingAllreduce final : public PhasedCollective {
 public:
  HalvingDoublingAllreduce(int p, std::uint64_t bytes, int element_bytes, Space space)
      : PhasedCollective(bytes, p, space), hd_(p), chunks_(bytes, hd_.p2, element_bytes) {
    const bool staged = space == Space::Host && p > 1;
    if (staged) phases_.add(Phase::CopyToHost, 1);
    add_halving_doubling_phases(phases_, hd_, Phase::Fold, Phase::ReduceScatter, Phase::Allgather, Phase::Unfold);
    if (staged) phases_.add(Phase::CopyToDevice, 1);
  }
  std::string_view algorithm() const override { return "halving_doubling_allreduce"; }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    auto [phase, k] = phases_.locate(s);
    if (staging_step(phase, m, bytes_, out)) return;
    halving_doubling_step(
        hd_, m, phase, k, chunks_, space_, [](int i) { return i; }, out);
  }

 private:
  HalvingDoubling hd_;
  Chunking chunks_;
};

// Where each server's shard starts in the buffer: shards laid out one after another.
std::vector<std::uint64_t> shard_offsets(const std::vector<std::uint64_t>& shards) {
  std::vector<std::uint64_t> offsets(shards.size());
  std::exclusive_scan(shards.begin(), shards.end(), offsets.begin(), std::uint64_t{0});
  return offsets;
}

class ParameterServerExchange final : public Collective {
 public:
  ParameterServerExchange(int workers, std::vector<std::uint64_t> shards, Space worker_space, bool on_workers)
      : Collective(std::accumulate(shards.begin(), shards.end(), std::uint64_t{0})),
        workers_(workers),
        shards_(std::move(shards)),
        offsets_(shard_offsets(shards_)),
        worker_space_(worker_space),
        on_workers_(on_workers) {}
  std::string_view algorithm() const override { return on_workers_ ? "parameter_server_on_gpus" : "parameter_server"; }
  int members() const override { return workers_ + (on_workers_ ? 0 : static_cast<int>(shards_.size())); }
  int steps() const override { return 2; }
  std::vector<StepRun> runs() const override { return {{0, 1, Phase::Push}, {1, 1, Phase::Pull}}; }
  Space home_space(int m) const override { return m < workers_ ? worker_space_ : Space::Host; }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    const bool push = s == 0;
    const Space server_space = on_workers_ ? worker_space_ : Space::Host;
    auto server_of = [&](int j) { return on_workers_ ? j : workers_ + j; };
    auto xfer = [&](int w, int j) {
      return push ? Transfer{w, server_of(j), worker_space_, server_space, offsets_[j], shards_[j], true}
                  : Transfer{server_of(j), w, server_space, worker_space_, offsets_[j], shards_[j], false};
    };
    // As a worker: push every shard to its server, pull it back (a server on this worker keeps its own).
    if (m < workers_)
      for (std::size_t j = 0; j < shards_.size(); ++j)
        if (shards_[j] > 0 && server_of(static_cast<int>(j)) != m)
          (push ? out.sends : out.recvs).push_back(xfer(m, static_cast<int>(j)));
    // As a server: receive and reduce every other worker's push, update, serve the pulls.
    const int j = on_workers_ ? m : m - workers_;
    if (j < 0 || j >= static_cast<int>(shards_.size()) || shards_[j] == 0) return;
    for (int w = 0; w < workers_; ++w)
      if (w != server_of(j)) (push ? out.recvs : out.sends).push_back(xfer(w, j));
    if (push) out.update_bytes = shards_[j];
  }

 private:
  int workers_;
  std::vector<std::uint64_t> shards_, offsets_;
  Space worker_space_;
  bool on_workers_;
};

// TensorFlow's distributed_replicated: each node first sums its GPUs' gradients on one of them (the
// aggregator), which pushes the node's sum to the servers; each node pulls the updated parameters once,
// into its local member 0's host memory, and copies them into every GPU.
class NodeAggregatedParameterServer final : public Collective {
 public:
  NodeAggregatedParameterServer(int nodes, int local, std::vector<std::uint64_t> shards, int aggregator,
                                Space worker_space)
      : Collective(std::accumulate(shards.begin(), shards.end(), std::uint64_t{0})),
        nodes_(nodes),
        local_(local),
        aggregator_(aggregator),
        shards_(std::move(shards)),
        offsets_(shard_offsets(shards_)),
        worker_space_(worker_space) {}
  std::string_view algorithm() const override { return "parameter_server_node_aggregated"; }
  int members() const override { return workers() + static_cast<int>(shards_.size()); }
  int steps() const override { return 4; }
  std::vector<StepRun> runs() const override {
    return {{0, 1, Phase::LocalReduce}, {1, 1, Phase::Push}, {2, 1, Phase::Pull}, {3, 1, Phase::LocalBroadcast}};
  }
  Space home_space(int m) const override { return m < workers() ? worker_space_ : Space::Host; }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    const int w = workers();
    if (m >= w) {  // a server
      const int j = m - w;
      if (shards_[j] == 0 || s == 0 || s == 3) return;
      for (int n = 0; n < nodes_; ++n) {
        if (s == 1) out.recvs.push_back(push(n, j));
        if (s == 2) out.sends.push_back(pull(n, j));
      }
      if (s == 1) out.update_bytes = shards_[j];
      return;
    }
    const int node = m / local_, l = m % local_, agg = node * local_ + aggregator_, root = node * local_;
    switch (s) {
      case 0:  // every GPU's gradients into the aggregator's
        if (l == aggregator_) {
          for (int k = 0; k < local_; ++k)
            if (k != aggregator_) out.recvs.push_back(gather(node * local_ + k, agg));
        } else {
          out.sends.push_back(gather(m, agg));
        }
        return;
      case 1:
        if (m != agg) return;
        for (std::size_t j = 0; j < shards_.size(); ++j)
          if (shards_[j] > 0) out.sends.push_back(push(node, static_cast<int>(j)));
        return;
      case 2:
        if (m != root) return;
        for (std::size_t j = 0; j < shards_.size(); ++j)
          if (shards_[j] > 0) out.recvs.push_back(pull(node, static_cast<int>(j)));
        return;
      default:          // from the node's host copy into every GPU
        if (m == root)  // its own GPU by a local copy, listed as a send and a receive
          for (int k = 0; k < local_; ++k) out.sends.push_back(spread(root, node * local_ + k));
        out.recvs.push_back(spread(root, m));
        return;
    }
  }

 private:
  int workers() const { return nodes_ * local_; }
  Transfer gather(int from, int to) const { return {from, to, worker_space_, worker_space_, 0, bytes_, true}; }
  Transfer push(int node, int j) const {
    return {node * local_ + aggregator_, workers() + j, worker_space_, Space::Host, offsets_[j], shards_[j], true};
  }
  Transfer pull(int node, int j) const {
    return {workers() + j, node * local_, Space::Host, Space::Host, offsets_[j], shards_[j], false};
  }
  Transfer spread(int root, int to) const { return {root, to, Space::Host, worker_space_, 0, bytes_, false}; }
  int nodes_, local_, aggregator_;
  std::vector<std::uint64_t> shards_, offsets_;
  Space worker_space_;
};

// NVLS: member p_ is the switch. Step t runs stage 0 (GPUs -> switch, reduced there) of slice t, stage 1
// (switch -> GPU g, shard g) of slice t - 1, stage 2 (GPU g -> switch, shard g) of slice t - 2 and stage 3
// (switch -> every GPU, every shard) of slice t - 3.
class NvlsAllreduce final : public Collective {
 public:
  NvlsAllreduce(int p, std::uint64_t bytes, int element_bytes, int slices)
      : Collective(bytes), p_(p), slices_(bytes, slices, element_bytes) {
    for (int k = 0; k < slices; ++k) shards_.emplace_back(slices_.size(k), p, element_bytes);
  }
  std::string_view algorithm() const override { return "nvls_allreduce"; }
  int members() const override { return p_ + 1; }
  int steps() const override { return slice_count() + 3; }
  Space home_space(int) const override { return Space::Device; }
  std::vector<StepRun> runs() const override {
    // The pipeline fills for 3 steps, runs full, and drains for 3: a run per distinct pattern.
    return runs_by_pattern(steps(), Phase::InSwitch, [this](int t) { return stages(t); });
  }
  void rank_step(int m, int t, RankStep& out) const override {
    out.clear();
    for (int stage = 0; stage < 4; ++stage) {
      const int k = t - stage;
      if (k >= 0 && k < slice_count()) add_stage(m, stage, k, out);
    }
  }

 private:
  void add_stage(int m, int stage, int k, RankStep& out) const {
    const std::uint64_t base = slices_.offset(k);
    const Chunking& c = shards_[k];
    auto move = [&](int from, int to, std::uint64_t off, std::uint64_t n, bool reduce) {
      if (n == 0) return;
      if (m == from) out.sends.push_back({from, to, Space::Device, Space::Device, off, n, reduce});
      if (m == to) out.recvs.push_back({from, to, Space::Device, Space::Device, off, n, reduce});
    };
    for (int g = 0; g < p_; ++g) {
      if (stage == 0) move(g, p_, base, slices_.size(k), g > 0);  // the first overwrites, the rest add
      if (stage == 1) move(p_, g, base + c.offset(g), c.size(g), false);
      if (stage == 2) move(g, p_, base + c.offset(g), c.size(g), false);
      if (stage == 3) move(p_, g, base, slices_.size(k), false);
    }
  }
  int slice_count() const { return static_cast<int>(shards_.size()); }
  // Step t's pattern: the size of the slice each stage moves (0: the stage idle). Steps alike carry the same.
  std::array<std::uint64_t, 4> stages(int t) const {
    std::array<std::uint64_t, 4> sizes{};
    for (int s = 0; s < 4; ++s)
      if (t - s >= 0 && t - s < slice_count()) sizes[s] = slices_.size(t - s);
    return sizes;
  }
  int p_;
  Chunking slices_;
  std::vector<Chunking> shards_;  // slice k in p shards
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

NodeTree node_tree(int nodes, int tree, int local) {
  NodeTree t{std::vector<int>(nodes, -1), std::vector<int>(nodes, local - 1), std::vector<int>(nodes, 0), {}, {}, 0};
  t.child_start.assign(nodes + 1, 0);
  int root = -1;
  for (int n = 0; n < nodes; ++n) {
    t.parent[n] = double_binary_tree_parent(tree, n, nodes);
    if (t.parent[n] < 0)
      root = n;
    else
      ++t.child_start[t.parent[n] + 1];
  }
  for (int n = 0; n < nodes; ++n) t.child_start[n + 1] += t.child_start[n];
  t.child_list.resize(t.child_start[nodes]);
  std::vector<int> fill(t.child_start.begin(), t.child_start.end() - 1);
  for (int n = 0; n < nodes; ++n)
    if (t.parent[n] >= 0) t.child_list[fill[t.parent[n]]++] = n;
  std::vector<int> order{root};  // breadth first from the root: depths, then heights leaves first
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int ch : t.children(order[i])) {
      t.depth[ch] = t.depth[order[i]] + 1;
      order.push_back(ch);
    }
  if (static_cast<int>(order.size()) != nodes) throw std::logic_error("tree: not every node is reached");
  for (auto it = order.rbegin(); it != order.rend(); ++it)
    if (t.parent[*it] >= 0) t.height[t.parent[*it]] = std::max(t.height[t.parent[*it]], t.height[*it] + 1);
  t.tall = t.height[root];
  return t;
}

// One channel of the tree allreduce: its node tree with the chain along `chain` (local indices; the first is
// the head) in every node, and the channel's share in chunks. Each member's parent (-1: the root), children
// (ascending), height and depth follow from its node's and its place in the chain.
struct TreeChannel {
  std::shared_ptr<const NodeTree> tree;
  std::vector<int> chain, place;  // place: each local index's position in the chain
  Chunking chunks;
  int tall() const { return tree->tall; }
  int local() const { return static_cast<int>(chain.size()); }
  int parent(int m) const {
    const int n = m / local(), i = place[m % local()];
    if (i > 0) return n * local() + chain[i - 1];
    return tree->parent[n] < 0 ? -1 : tree->parent[n] * local() + chain[0];
  }
  int height(int m) const {
    const int i = place[m % local()];
    return i > 0 ? local() - 1 - i : tree->height[m / local()];
  }
  int depth(int m) const { return tree->depth[m / local()] + place[m % local()]; }
  // Member m's children in ascending order: the next in its chain, and for a head the heads of its child nodes.
  template <class F>
  void for_children(int m, F&& f) const {
    const int n = m / local(), i = place[m % local()];
    const int next = i + 1 < local() ? n * local() + chain[i + 1] : -1;
    bool listed = next < 0;
    if (i == 0)
      for (int child : tree->children(n)) {
        if (!listed && child > n) {
          f(next);
          listed = true;
        }
        f(child * local() + chain[0]);
      }
    if (!listed) f(next);
  }
};

TreeChannel tree_channel(std::shared_ptr<const NodeTree> tree, const std::vector<int>& chain, Chunking chunks) {
  TreeChannel c{std::move(tree), chain, std::vector<int>(chain.size()), chunks};
  for (std::size_t i = 0; i < chain.size(); ++i) c.place[chain[i]] = static_cast<int>(i);
  return c;
}

// Tree step t moves, in channel c, chunk t - h up from every member of height h and chunk t - tall - d
// down from every member of depth d (its parent's send arrives the step before it forwards).
class TreeAllreduce final : public PhasedCollective {
 public:
  TreeAllreduce(int nodes, int local, std::uint64_t bytes, int element_bytes, Space space,
                const std::vector<std::vector<int>>& chains, int chunks)
      : PhasedCollective(bytes, nodes * local, space),
        p_(nodes * local),
        local_(local),
        chunks_(chunks),
        channel_split_(bytes, static_cast<int>(chains.size()), element_bytes) {
    const std::array<std::shared_ptr<const NodeTree>, 2> trees{std::make_shared<NodeTree>(node_tree(nodes, 0, local)),
                                                               std::make_shared<NodeTree>(node_tree(nodes, 1, local))};
    headed_.resize(local);
    for (std::size_t c = 0; c < chains.size(); ++c) {
      const Chunking share(channel_split_.size(static_cast<int>(c)), chunks, element_bytes);
      const std::vector<int> chain = checked_chain(chains[c], local);
      headed_[chain.front()].push_back(static_cast<int>(c));
      channels_.push_back(tree_channel(trees[c % 2], chain, share));
      tall_ = std::max(tall_, channels_.back().tall());
    }
    const bool staged = space == Space::Host && p_ > 1;
    if (staged) phases_.add(Phase::CopyToHost, 1);
    if (p_ > 1) add_tree_runs();
    if (staged) phases_.add(Phase::CopyToDevice, 1);
  }
  std::string_view algorithm() const override { return "tree_allreduce"; }
  void rank_step(int m, int s, RankStep& out) const override {
    out.clear();
    auto [phase, t] = phases_.locate(s);
    if (staging_step(phase, m, bytes_, out)) return;
    for (std::size_t c = 0; c < channels_.size(); ++c) add_channel(m, t, c, out);
  }
  // A member's steps follow from its place in each channel's tree: its height and depth, whether it is the
  // root, and its children's heights (the chains are the same in every node).
  NodeClasses node_classes() const override {
    return classes_by_key(p_ / local_, local_, 0, [this](int n, std::vector<int>& key) {
      for (const TreeChannel& c : channels_)
        for (int m = n * local_; m < (n + 1) * local_; ++m) {
          key.insert(key.end(), {c.height(m), c.depth(m), c.parent(m) < 0, -1});
          c.for_children(m, [&](int ch) { key.push_back(c.height(ch)); });
        }
    });
  }
  // Only a chain's head sends to another node (to its parent and its remote children).
  void remote_sends(int m, int s, const NodeClasses& nodes, std::vector<Transfer>& out) const override {
    if (nodes.local != local_ || nodes.extra != 0) return Collective::remote_sends(m, s, nodes, out);
    out.clear();
    const auto [phase, step] = phases_.locate(s);
    if (phase == Phase::CopyToHost || phase == Phase::CopyToDevice) return;
    const int t = step;  // a plain variable: lambdas capture it
    for (int c : headed_[m % local_]) {  // as add_channel lists them
      const TreeChannel& ch = channels_[c];
      const std::uint64_t base = channel_split_.offset(c);
      auto send = [&](int j, int dst, bool up) {
        if (chunk_size(ch, j) > 0)
          out.push_back({m, dst, space_, space_, base + ch.chunks.offset(j), ch.chunks.size(j), up});
      };
      if (const int parent = ch.parent(m); parent >= 0) send(t - ch.height(m), parent, true);
      ch.for_children(m, [&](int child) {
        if (child / local_ != m / local_) send(t - ch.tall() - ch.depth(m), child, false);
      });
    }
  }

 private:
  static std::vector<int> checked_chain(std::vector<int> chain, int local) {
    if (chain.empty())
      for (int i = 0; i < local; ++i) chain.push_back(i);
    std::vector<int> sorted = chain;
    std::sort(sorted.begin(), sorted.end());
    for (int i = 0; i < local; ++i)
      if (static_cast<int>(sorted.size()) != local || sorted[i] != i)
        throw std::invalid_argument("tree chain: not a permutation of the local members");
    return chain;
  }
  std::uint64_t chunk_size(const TreeChannel& c, int j) const { return j >= 0 && j < chunks_ ? c.chunks.size(j) : 0; }
  void add_channel(int m, int t, std::size_t ci, RankStep& out) const {
    const TreeChannel& c = channels_[ci];
    const std::uint64_t base = channel_split_.offset(static_cast<int>(ci));
    auto move = [&](std::vector<Transfer>& to, int j, int from, int dst, bool up) {
      if (chunk_size(c, j) > 0)
        to.push_back({from, dst, space_, space_, base + c.chunks.offset(j), c.chunks.size(j), up});
    };
    const int parent = c.parent(m), down = t - c.tall() - c.depth(m);
    if (parent >= 0) move(out.sends, t - c.height(m), m, parent, true);
    c.for_children(m, [&](int ch) { move(out.recvs, t - c.height(ch), ch, m, true); });
    if (parent >= 0) move(out.recvs, down + 1, parent, m, false);
    c.for_children(m, [&](int ch) { move(out.sends, down, m, ch, false); });
  }
  // Consecutive tree steps that move the same chunk sizes at every level form one run.
  void add_tree_runs() {
    const int steps = chunks_ + 2 * tall_ - 1;
    for (int t = 0; t < steps;) {
      int end = t + 1;
      while (end < steps && levels(end) == levels(t)) ++end;
      bool up = false, down = false;
      for (const auto& c : channels_)
        for (int l = 0; l < c.tall(); ++l) {
          up = up || chunk_size(c, t - l) > 0;
          down = down || chunk_size(c, t - c.tall() - l) > 0;
        }
      phases_.add(up && down ? Phase::TreeUpDown : up ? Phase::TreeUp : Phase::TreeDown, end - t, t);
      t = end;
    }
  }
  // Step t's pattern: per channel, the chunk size sent up from each height and down from each depth.
  std::vector<std::uint64_t> levels(int t) const {
    std::vector<std::uint64_t> v;
    for (const auto& c : channels_)
      for (int l = 0; l < c.tall(); ++l) {
        v.push_back(chunk_size(c, t - l));
        v.push_back(chunk_size(c, t - c.tall() - l));
      }
    return v;
  }
  int p_, local_, chunks_, tall_ = 0;
  Chunking channel_split_;
  std::vector<TreeChannel> channels_;
  std::vector<std::vector<int>> headed_;  // per local index, the channels whose chain it heads
};

// NVLS inside each node, NCCL's double binary tree across: slice k moves at offset j = t - k of its own
// (NvlsTreeAllreduce). Node n's part of tree `tau`: the offset its heads send up at, and the offset its
// heads hold the final values from (they send them down and store them to the switch).
class NvlsTreeAllreduce final : public Collective {
 public:
  NvlsTreeAllreduce(int nodes, int local, std::uint64_t bytes, int element_bytes, int slices)
      : Collective(bytes), nodes_(nodes), local_(local), slices_(bytes, slices, element_bytes) {
    for (int k = 0; k < slices; ++k) {
      const Chunking halves(slices_.size(k), 2, element_bytes);
      halves_.push_back(halves);
      for (int tau = 0; tau < 2; ++tau) shards_.emplace_back(halves.size(tau), local, element_bytes);
    }
    for (int tau = 0; tau < 2; ++tau) {
      trees_.push_back(node_tree(nodes, tau, 1));
      for (int n = 0; n < nodes; ++n) last_ = std::max(last_, final_at(tau, n) + 1);
    }
  }
  std::string_view algorithm() const override { return "nvls_tree_allreduce"; }
  int members() const override { return nodes_ * local_ + nodes_; }  // the GPUs, then each node's switch
  int steps() const override { return slice_count() + last_; }
  Space home_space(int) const override { return Space::Device; }
  std::vector<StepRun> runs() const override {
    return runs_by_pattern(steps(), Phase::InSwitch, [this](int t) { return pattern(t); });
  }
  void rank_step(int m, int t, RankStep& out) const override {
    out.clear();
    for (int j = 0; j <= last_; ++j)
      if (t - j >= 0 && t - j < slice_count()) add_offset(m, t - j, j, out);
  }
  // A node's steps follow from its place in both trees: its height and depth, whether it is the root, and
  // its children's heights.
  NodeClasses node_classes() const override {
    return classes_by_key(nodes_, local_, 1, [this](int n, std::vector<int>& key) {
      for (const NodeTree& tr : trees_) {
        key.insert(key.end(), {tr.height[n], tr.depth[n], tr.parent[n] < 0, -1});
        for (int ch : tr.children(n)) key.push_back(tr.height[ch]);
      }
    });
  }
  // A GPU sends to other nodes up its trees and down (as add_offset lists them); a switch never does.
  void remote_sends(int m, int t, const NodeClasses& nodes, std::vector<Transfer>& out) const override {
    if (nodes.local != local_ || nodes.extra != 1) return Collective::remote_sends(m, t, nodes, out);
    out.clear();
    if (m >= nodes_ * local_) return;
    const int n = m / local_, g = m % local_;
    for (int j = 0; j <= last_; ++j) {
      const int k = t - j;
      if (k < 0 || k >= slice_count()) continue;
      for (int tau = 0; tau < 2; ++tau) {
        const NodeTree& tr = trees_[tau];
        const Chunking& c = shards_[2 * k + tau];
        const std::uint64_t at = slices_.offset(k) + halves_[k].offset(tau) + c.offset(g), size = c.size(g);
        auto send = [&](int to, bool reduce) {
          if (size > 0) out.push_back({m, gpu(to, g), Space::Device, Space::Device, at, size, reduce});
        };
        if (j == up_at(tau, n) && tr.parent[n] >= 0) send(tr.parent[n], true);
        if (j == final_at(tau, n))
          for (int ch : tr.children(n)) send(ch, false);
      }
    }
  }

 private:
  int up_at(int tau, int n) const { return 2 + trees_[tau].height[n]; }
  int final_at(int tau, int n) const { return 2 + trees_[tau].tall + trees_[tau].depth[n]; }
  int gpu(int n, int g) const { return n * local_ + g; }
  int sw(int n) const { return nodes_ * local_ + n; }
  // Slice k's events at offset j that member m sends or receives.
  void add_offset(int m, int k, int j, RankStep& out) const {
    const std::uint64_t base = slices_.offset(k);
    auto move = [&](int from, int to, std::uint64_t off, std::uint64_t n, bool reduce) {
      if (n == 0) return;
      if (m == from) out.sends.push_back({from, to, Space::Device, Space::Device, off, n, reduce});
      if (m == to) out.recvs.push_back({from, to, Space::Device, Space::Device, off, n, reduce});
    };
    const int n = m < nodes_ * local_ ? m / local_ : m - nodes_ * local_;  // the node m is in
    // Every message m sends or receives touches its own node n: those within n, and n's tree messages to and
    // from its parent's and children's GPU g.
    for (int g = 0; g < local_; ++g) {
      if (j == 0) move(gpu(n, g), sw(n), base, slices_.size(k), g > 0);  // the first overwrites, the rest add
      for (int tau = 0; tau < 2; ++tau) {
        const Chunking& c = shards_[2 * k + tau];
        const std::uint64_t at = base + halves_[k].offset(tau) + c.offset(g), size = c.size(g);
        const NodeTree& tr = trees_[tau];
        if (j == 1) move(sw(n), gpu(n, g), at, size, false);
        if (j == up_at(tau, n) && tr.parent[n] >= 0) move(gpu(n, g), gpu(tr.parent[n], g), at, size, true);
        for (int ch : tr.children(n))  // n's children send up to n; n sends the final values down
          if (j == up_at(tau, ch)) move(gpu(ch, g), gpu(n, g), at, size, true);
        if (j == final_at(tau, n)) {
          for (int ch : tr.children(n)) move(gpu(n, g), gpu(ch, g), at, size, false);
          move(gpu(n, g), sw(n), at, size, false);
        }
        if (tr.parent[n] >= 0 && j == final_at(tau, tr.parent[n]))
          move(gpu(tr.parent[n], g), gpu(n, g), at, size, false);
        if (j == final_at(tau, n) + 1 && g == 0)  // the switch multicasts half tau to every GPU
          for (int to = 0; to < local_; ++to)
            move(sw(n), gpu(n, to), base + halves_[k].offset(tau), halves_[k].size(tau), false);
      }
    }
  }
  int slice_count() const { return static_cast<int>(halves_.size()); }
  // Step t's pattern: the size of the slice at each offset (0: none). Steps alike carry the same.
  std::vector<std::uint64_t> pattern(int t) const {
    std::vector<std::uint64_t> sizes(last_ + 1, 0);
    for (int j = 0; j <= last_; ++j)
      if (t - j >= 0 && t - j < slice_count()) sizes[j] = slices_.size(t - j);
    return sizes;
  }
  int nodes_, local_, last_ = 0;  // last_: the offset of the last multicast
  Chunking slices_;
  std::vector<Chunking> halves_;  // slice k in two halves, one per tree
  std::vector<Chunking> shards_;  // half tau of slice k (2 k + tau) in one shard per GPU of a node
  std::vector<NodeTree> trees_;
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
  if (members < 1) throw std::invalid_argument("ring reduce-scatter needs at least one member");
  return std::make_unique<RingAllreduce>(members, bytes, element_bytes, Space::Device, RingPart::ReduceScatter,
                                         std::vector<std::vector<int>>(1));
}

std::unique_ptr<Collective> make_ring_allgather(int members, std::uint64_t bytes, int element_bytes) {
  if (members < 1) throw std::invalid_argument("ring allgather needs at least one member");
  return std::make_unique<RingAllreduce>(members, bytes, element_bytes, Space::Device, RingPart::Allgather,
                                         std::vector<std::vector<int>>(1));
}

std::unique_ptr<Collective> make_hierarchical_allreduce(int nodes, int local, std::uint64_t bytes, int element_bytes,
                                                        Space space, const std::vector<int>& local_order,
                                                        CrossNode cross) {
  if (nodes < 1 || local < 1) throw std::invalid_argument("hierarchical allreduce needs nodes, local >= 1");
  return std::make_unique<HierarchicalAllreduce>(nodes, local, bytes, element_bytes, space, local_order, cross);
}

std::unique_ptr<Collective> make_nvls_allreduce(int gpus, std::uint64_t bytes, int element_bytes, int slices) {
  if (gpus < 1 || slices < 1) throw std::invalid_argument("nvls allreduce needs GPUs and slices");
  const std::uint64_t most = std::max<std::uint64_t>(1, bytes / static_cast<std::uint64_t>(element_bytes));
  return std::make_unique<NvlsAllreduce>(gpus, bytes, element_bytes,
                                         static_cast<int>(std::min<std::uint64_t>(slices, most)));
}

std::unique_ptr<Collective> make_nvls_tree_allreduce(int nodes, int local, std::uint64_t bytes, int element_bytes,
                                                     int slices) {
  if (nodes < 1 || local < 1 || slices < 1)
    throw std::invalid_argument("nvls tree allreduce needs nodes, GPUs, slices");
  const std::uint64_t most = std::max<std::uint64_t>(1, bytes / static_cast<std::uint64_t>(element_bytes));
  return std::make_unique<NvlsTreeAllreduce>(nodes, local, bytes, element_bytes,
                                             static_cast<int>(std::min<std::uint64_t>(slices, most)));
}

int binary_tree_parent(int rank, int ranks) {
  if (rank <= 0 || rank >= ranks) return -1;
  const int bit = rank & -rank;  // NCCL's tree alternates leaves and inner ranks by their lowest set bit
  const int up = (rank ^ bit) | (bit << 1);
  return up < ranks ? up : rank ^ bit;
}

int double_binary_tree_parent(int tree, int rank, int ranks) {
  if (tree == 0) return binary_tree_parent(rank, ranks);
  if (ranks % 2 == 1) {  // shifted by one
    const int up = binary_tree_parent((rank - 1 + ranks) % ranks, ranks);
    return up < 0 ? -1 : (up + 1) % ranks;
  }
  const int up = binary_tree_parent(ranks - 1 - rank, ranks);  // mirrored
  return up < 0 ? -1 : ranks - 1 - up;
}

int tree_chunks(std::uint64_t bytes, int channels, int depth) {
  const std::uint64_t share = bytes / static_cast<std::uint64_t>(std::max(1, channels));
  const auto levels = static_cast<std::uint64_t>(std::max(1, depth));
  std::uint64_t chunk = 512 * 1024;
  auto shrink = [&](std::uint64_t per_level, std::uint64_t smallest) {
    while (share / chunk < per_level * levels && chunk > smallest) chunk /= 2;
  };
  shrink(8, 128 * 1024);
  shrink(4, 64 * 1024);
  shrink(1, 32 * 1024);
  return static_cast<int>(std::max<std::uint64_t>(1, (share + chunk - 1) / chunk));
}

std::unique_ptr<Collective> make_tree_allreduce(int nodes, int local, std::uint64_t bytes, int element_bytes,
                                                Space space, const std::vector<std::vector<int>>& chains, int chunks) {
  if (nodes < 1 || local < 1 || chains.empty() || chunks < 1)
    throw std::invalid_argument("tree allreduce needs nodes, local members, a channel and a chunk");
  // Every chunk holds at least one element of the smallest channel share.
  const std::uint64_t share = bytes / static_cast<std::uint64_t>(element_bytes) / chains.size();
  const int most = static_cast<int>(std::clamp<std::uint64_t>(share, 1, static_cast<std::uint64_t>(chunks)));
  return std::make_unique<TreeAllreduce>(nodes, local, bytes, element_bytes, space, chains, most);
}

std::unique_ptr<Collective> make_halving_doubling_allreduce(int members, std::uint64_t bytes, int element_bytes,
                                                            Space space) {
  if (members < 1) throw std::invalid_argument("halving-doubling allreduce needs at least one member");
  return std::make_unique<HalvingDoublingAllreduce>(members, bytes, element_bytes, space);
}

std::unique_ptr<Collective> make_parameter_server_exchange(int workers, const std::vector<std::uint64_t>& shard_bytes,
                                                           Space worker_space) {
  if (workers < 1 || shard_bytes.empty()) throw std::invalid_argument("parameter server needs workers and servers");
  return std::make_unique<ParameterServerExchange>(workers, shard_bytes, worker_space, false);
}

std::unique_ptr<Collective> make_parameter_server_on_workers(const std::vector<std::uint64_t>& shard_bytes,
                                                             Space worker_space) {
  if (shard_bytes.empty()) throw std::invalid_argument("parameter servers on workers need workers");
  return std::make_unique<ParameterServerExchange>(static_cast<int>(shard_bytes.size()), shard_bytes, worker_space,
                                                   true);
}

std::unique_ptr<Collective> make_node_aggregated_parameter_server(int nodes, int local,
                                                                  const std::vector<std::uint64_t>& shard_bytes,
                                                                  int aggregator, Space worker_space) {
  if (nodes < 1 || local < 1 || shard_bytes.empty() || aggregator < 0 || aggregator >= local)
    throw std::invalid_argument("node-aggregated parameter server needs nodes, GPUs, servers and an aggregating GPU");
  return std::make_unique<NodeAggregatedParameterServer>(nodes, local, shard_bytes, aggregator, worker_space);
}

std::vector<int> assign_to_servers(const std::vector<std::uint64_t>& tensor_bytes, int servers, ServerAssignment how) {
  std::vector<std::uint64_t> load(servers, 0);
  std::vector<int> where;
  where.reserve(tensor_bytes.size());
  if (how == ServerAssignment::RoundRobin) {
    for (std::size_t i = 0; i < tensor_bytes.size(); ++i) where.push_back(static_cast<int>(i % servers));
    return where;
  }
  for (auto b : tensor_bytes) {
    const int j = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    load[j] += b;
    where.push_back(j);
  }
  return where;
}

std::vector<std::uint64_t> sweep_sizes(std::uint64_t min_bytes, std::uint64_t max_bytes, double factor,
                                       std::size_t element_bytes) {
  std::vector<std::uint64_t> sizes;
  for (double b = static_cast<double>(min_bytes); b <= static_cast<double>(max_bytes) * (1 + 1e-9);
       b = b == 0 ? static_cast<double>(element_bytes) : b * factor)
    sizes.push_back(static_cast<std::uint64_t>(b) / element_bytes * element_bytes);
  return sizes;
}

}  // namespace ringsim::collective

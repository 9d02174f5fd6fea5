// NCCL's tree allreduce (its double binary tree across nodes, a chain inside each), the trees themselves, and
// the tree chunk size.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>
#include <vector>

#include "collective/algorithm_steps.h"
#include "collective/collective.h"

namespace ringsim::collective {

namespace detail {

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

}  // namespace detail

namespace {

using detail::classes_by_key;
using detail::node_tree;
using detail::NodeTree;
using detail::PhasedCollective;
using detail::staging_step;

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
    const int t = step;                  // a plain variable: lambdas capture it
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

}  // namespace

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

}  // namespace ringsim::collective

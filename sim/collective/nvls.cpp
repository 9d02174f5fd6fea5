// NCCL's NVLink SHARP allreduces: NVLS on one NVSwitch, NVLSTree (NVLS in each node, the double binary tree
// across nodes).
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "collective/algorithm_steps.h"
#include "collective/collective.h"

namespace ringsim::collective {

namespace {

using detail::classes_by_key;
using detail::node_tree;
using detail::NodeTree;

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

}  // namespace ringsim::collective

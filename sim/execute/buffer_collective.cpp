#include "execute/buffer_collective.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "execute/comm_model.h"
#include "execute/step_model.h"
#include "graph/ring_search.h"

namespace ringsim {

namespace {
// Channel c's chain: node 0's ranks in the order ring c / 2 visits them (entering at the chain's head), so
// the trees spread over the links and NICs as the searched rings do; both trees of a pair share it.
std::vector<std::vector<int>> tree_chains(RingSearch& search, int gpus_per_node, int channels) {
  const auto rings = search.ring_orders((channels + 1) / 2);
  std::vector<std::vector<int>> chains;
  for (int c = 0; c < channels; ++c) {
    std::vector<int> chain;
    for (int r : rings[c / 2])
      if (r < gpus_per_node) chain.push_back(r);
    chains.push_back(std::move(chain));
  }
  return chains;
}

std::unique_ptr<collective::Collective> make_ring(const BufferCollectiveLayout& layout, std::uint64_t bytes,
                                                  int element_bytes) {
  // No orders given: one channel in index order.
  return collective::make_ring_allreduce(
      layout.workers, bytes, element_bytes, layout.space,
      layout.ring_orders.empty() ? std::vector<std::vector<int>>(1) : layout.ring_orders);
}

std::unique_ptr<collective::Collective> make_tree(const Scenario& s, const BufferCollectiveLayout& layout,
                                                  std::uint64_t bytes, int element_bytes, int channels) {
  // NCCL's tree depth (src/graph/connect.cc): the chain inside a node and log2 of the nodes. At most 1,024
  // chunks a channel (NCCL's would be 1,024 at 1 GiB on 2 channels) keep the flow fidelity's steps bounded.
  const int nodes = s.cluster.nodes, gpn = s.cluster.gpus_per_node;
  const int depth = gpn - 1 + static_cast<int>(std::floor(std::log2(nodes)));
  auto chains = layout.tree_chains.empty() ? std::vector<std::vector<int>>(channels) : layout.tree_chains;
  const int chunks = std::min(1024, collective::tree_chunks(bytes, static_cast<int>(chains.size()), depth));
  return collective::make_tree_allreduce(nodes, gpn, bytes, element_bytes, layout.space, chains, chunks);
}

// The choice's inputs: NVLink inside the node, and the ring's bus bandwidth at 256 MiB.
AlgorithmChoice algorithm_choice(const Scenario& s, const BufferCollectiveLayout& l, CommModel& cm) {
  AlgorithmChoice c{*cm.library().tuning, s.cluster.nodes, l.workers, cm.gpus_on_nvlink(), 0};
  constexpr std::uint64_t kProbe = 256ull << 20;
  const auto ring = make_ring(l, kProbe, 4);
  const double t = collective_duration(*ring, cm, nullptr);
  c.bus_bandwidth = t > 0 ? collective::bus_bandwidth_factor(collective::BusOp::AllReduce, l.workers) * kProbe / t : 0;
  return c;
}
}  // namespace

bool picks_tree(const AlgorithmChoice& c, std::uint64_t bytes) {
  const AlgorithmTuning& t = c.tuning;
  const double n = c.ranks, nodes = c.nodes, b = static_cast<double>(bytes);
  if (c.ranks < 2 || c.bus_bandwidth <= 0) return false;
  const double ring_steps = 2 * (n - 1), inter_steps = 2 * (nodes - 1);
  double ring_latency =
      t.ring.base + (ring_steps - inter_steps) * (c.nvlink ? t.ring.nvlink : t.ring.pci) + inter_steps * t.ring.network;
  if (c.nodes > 1 && b >= n / 16 * 65536) ring_latency *= t.ring_plateau;
  const double tree_latency = t.tree.base + 2 * ((n / nodes - 1) * (c.nvlink ? t.tree.nvlink : t.tree.pci) +
                                                 std::floor(std::log2(nodes)) * t.tree.network);
  double tree_bandwidth = c.bus_bandwidth * t.tree_bandwidth * 0.5;  // NCCL: a tree's algbw is busBw / 2
  std::size_t log_size = 0;                                          // NCCL's log2i(bytes >> 6)
  for (std::uint64_t v = bytes >> 6; v > 1; v >>= 1) ++log_size;
  if (log_size < t.tree_correction.size()) tree_bandwidth *= t.tree_correction[log_size];
  const double ring_bandwidth = c.bus_bandwidth * n / ring_steps;
  return tree_latency + b / tree_bandwidth < ring_latency + b / ring_bandwidth;
}

BufferCollectiveLayout buffer_collective_layout(const Scenario& s, collective::Space space, CommModel& costs) {
  RingSearch search(costs);
  const Strategy st = s.communication.strategy;
  const int channels = s.communication.channels;
  // NCCL 1.x orders its one ring by device index whatever the links: nothing to search.
  const bool device_order = costs.library().ring_order == RingOrder::Device;
  auto index_order = [](int n) {
    std::vector<int> order(static_cast<std::size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    return order;
  };
  BufferCollectiveLayout l{
      costs.workers(), space, {}, device_order ? index_order(s.cluster.gpus_per_node) : search.local_ring_order(), {},
      std::nullopt};
  if (st == Strategy::Ring || st == Strategy::Auto)
    l.ring_orders =
        device_order ? std::vector<std::vector<int>>(static_cast<std::size_t>(channels), index_order(costs.workers()))
                     : search.ring_orders(channels);
  if (st == Strategy::Tree) l.tree_chains = tree_chains(search, s.cluster.gpus_per_node, channels);
  if (st == Strategy::Auto) {
    l.tree_chains = tree_chains(search, s.cluster.gpus_per_node, 2 * channels);
    l.choice = algorithm_choice(s, l, costs);
  }
  return l;
}

collective::FusionPlanner gradient_planner(const Scenario& s, std::vector<collective::FusionTensor> tensors,
                                           int ranks) {
  const CommunicationConfig& c = s.communication;
  if (c.framework == Framework::PytorchDdp) {
    auto buckets = collective::ddp_buckets(tensors, static_cast<std::uint64_t>(c.first_bucket_bytes),
                                           static_cast<std::uint64_t>(c.bucket_bytes));
    return collective::FusionPlanner(std::move(tensors), std::move(buckets), ranks);
  }
  return collective::FusionPlanner(std::move(tensors), static_cast<std::uint64_t>(c.fusion_threshold_bytes), ranks);
}

std::vector<int> tensor_servers(const Scenario& s, const std::vector<std::uint64_t>& tensor_bytes) {
  return collective::assign_to_servers(tensor_bytes, s.communication.parameter_servers, s.communication.ps_assignment);
}

BufferShards buffer_shards(const Scenario& s, const std::vector<int>& server_of,
                           const std::vector<std::uint64_t>& tensor_bytes, const std::vector<int>& tensors) {
  BufferShards b;
  b.bytes.assign(s.communication.parameter_servers, 0);
  for (int t : tensors) b.bytes[server_of.at(t)] += tensor_bytes.at(t);
  if (!tensors.empty()) b.aggregator = tensors.front() % s.cluster.gpus_per_node;
  return b;
}

std::unique_ptr<collective::Collective> make_buffer_collective(const Scenario& s, const BufferCollectiveLayout& layout,
                                                               std::uint64_t bytes, int element_bytes,
                                                               const BufferShards& shards) {
  const auto& c = s.communication;
  switch (c.strategy) {
    case Strategy::Ring:
      return make_ring(layout, bytes, element_bytes);
    case Strategy::Hierarchical:
      return collective::make_hierarchical_allreduce(s.cluster.nodes, s.cluster.gpus_per_node, bytes, element_bytes,
                                                     layout.space, layout.local_order, c.cross_node);
    case Strategy::Tree:
      return make_tree(s, layout, bytes, element_bytes, c.channels);
    case Strategy::Auto:
      if (layout.choice && picks_tree(*layout.choice, bytes))
        return make_tree(s, layout, bytes, element_bytes, 2 * c.channels);
      return make_ring(layout, bytes, element_bytes);
    case Strategy::HalvingDoubling:
      return collective::make_halving_doubling_allreduce(layout.workers, bytes, element_bytes, layout.space);
    case Strategy::Nvls: {
      // NCCL moves an allreduce in 1 MiB slices (libraries.yaml [ncclslice]); at most 256 keep the pipeline's
      // fill and drain under 2 % of it and the flow fidelity's steps few.
      constexpr std::uint64_t kSlice = 1 << 20;
      const auto slices = static_cast<int>(std::clamp<std::uint64_t>(bytes / kSlice, 1, 256));
      return collective::make_nvls_allreduce(layout.workers, bytes, element_bytes, slices);
    }
    case Strategy::ParameterServer:
      // Workers push from and pull into their GPU buffers; servers reduce in host memory, or on the GPUs.
      if (c.ps_placement == PsPlacement::Gpus)
        return collective::make_parameter_server_on_workers(shards.bytes, collective::Space::Device);
      if (c.ps_aggregation == PsAggregation::Node)
        return collective::make_node_aggregated_parameter_server(s.cluster.nodes, s.cluster.gpus_per_node, shards.bytes,
                                                                 shards.aggregator, collective::Space::Device);
      return collective::make_parameter_server_exchange(layout.workers, shards.bytes, collective::Space::Device);
  }
  throw std::logic_error("unknown strategy");
}

}  // namespace ringsim

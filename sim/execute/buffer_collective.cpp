#include "execute/buffer_collective.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "graph/ring_search.h"

namespace ringsim {

BufferCollectiveLayout buffer_collective_layout(const Scenario& s, collective::Space space, PathCost& costs) {
  RingSearch search(costs);
  BufferCollectiveLayout l{costs.workers(), space, {}, search.local_ring_order(), {}};
  if (s.communication.strategy == Strategy::Ring) l.ring_orders = search.ring_orders(s.communication.channels);
  if (s.communication.strategy == Strategy::Tree)
    for (int c = 0; c < s.communication.channels; ++c) {
      std::vector<int> chain = l.local_order;
      if (chain.empty())
        for (int i = 0; i < s.cluster.gpus_per_node; ++i) chain.push_back(i);
      std::rotate(chain.begin(), chain.begin() + (c / 2) % static_cast<int>(chain.size()), chain.end());
      l.tree_chains.push_back(std::move(chain));
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
      // No orders given: one channel in index order.
      return collective::make_ring_allreduce(
          layout.workers, bytes, element_bytes, layout.space,
          layout.ring_orders.empty() ? std::vector<std::vector<int>>(1) : layout.ring_orders);
    case Strategy::Hierarchical:
      return collective::make_hierarchical_allreduce(s.cluster.nodes, s.cluster.gpus_per_node, bytes, element_bytes,
                                                     layout.space, layout.local_order, c.cross_node);
    case Strategy::Tree: {
      // NCCL's tree depth (src/graph/connect.cc): the chain inside a node and log2 of the nodes. At most
      // 1,024 chunks a channel (NCCL's would be 1,024 at 1 GiB on 2 channels) keep the flow fidelity's
      // steps bounded.
      const int nodes = s.cluster.nodes, gpn = s.cluster.gpus_per_node;
      const int depth = gpn - 1 + static_cast<int>(std::floor(std::log2(nodes)));
      auto chains = layout.tree_chains.empty() ? std::vector<std::vector<int>>(c.channels) : layout.tree_chains;
      const int chunks = std::min(1024, collective::tree_chunks(bytes, static_cast<int>(chains.size()), depth));
      return collective::make_tree_allreduce(nodes, gpn, bytes, element_bytes, layout.space, chains, chunks);
    }
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

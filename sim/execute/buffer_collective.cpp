#include "execute/buffer_collective.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <sstream>
#include <stdexcept>

#include "execute/analytic/step_model.h"
#include "execute/comm_model.h"
#include "graph/ring_search.h"

namespace ringsim {

namespace {
// Channel c's chain: node 0's ranks in the order ring c / 2 visits them (entering at the chain's head), so
// the trees spread over the links and NICs as the searched rings do; both trees of a pair share it.
std::vector<std::vector<int>> tree_chains(const std::vector<std::vector<int>>& rings, int gpus_per_node, int channels) {
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

// NCCL's NVLS over the GPUs and the switch (member `gpus`). NCCL moves an allreduce in 1 MiB slices
// (libraries.yaml [ncclslice]); at most 256 keep the pipeline's fill and drain under 2 % of it and the flow
// fidelity's steps few.
int nvls_slices(std::uint64_t bytes) {
  constexpr std::uint64_t kSlice = 1 << 20;
  return static_cast<int>(std::clamp<std::uint64_t>(bytes / kSlice, 1, 256));
}
std::unique_ptr<collective::Collective> make_nvls(int gpus, std::uint64_t bytes, int element_bytes) {
  return collective::make_nvls_allreduce(gpus, bytes, element_bytes, nvls_slices(bytes));
}
// NCCL's NVLSTree across the scenario's nodes, a slice per loop of NCCL's kernel: a chunk for each of its
// `channels` (the library's nvls_channels) and each GPU of a node. The chunk (NCCL 2.18.5 src/enqueue.cc):
// 2 MiB (512 KiB steps x 4, Simple), 256 KiB below 32 loops, 128 KiB below 16, 64 KiB below 4, 32 KiB below
// one; at most 256 slices.
std::unique_ptr<collective::Collective> make_nvls_tree(const Scenario& s, std::uint64_t bytes, int element_bytes,
                                                       int channels) {
  const auto ops = static_cast<std::uint64_t>(std::max(1, channels) * s.cluster.gpus_per_node);
  std::uint64_t chunk = 2 << 20;
  for (const auto& [loops, smaller] :
       {std::pair<std::uint64_t, std::uint64_t>{32, 256 << 10}, {16, 128 << 10}, {4, 64 << 10}, {1, 32 << 10}})
    if (bytes < loops * ops * chunk && chunk > smaller) chunk = smaller;
  const auto slices = static_cast<int>(std::clamp<std::uint64_t>((bytes + ops * chunk - 1) / (ops * chunk), 1, 256));
  return collective::make_nvls_tree_allreduce(s.cluster.nodes, s.cluster.gpus_per_node, bytes, element_bytes, slices);
}

// The choice's inputs: NVLink inside the node, the GPUs, the fabric, and the ring's bus bandwidth at 256 MiB.
AlgorithmChoice algorithm_choice(const Scenario& s, const BufferCollectiveLayout& l, CommModel& cm) {
  AlgorithmChoice c;
  c.tuning = *cm.library().tuning;
  // NCCL counts a rack-scale NVLink domain (GB200 NVL72) as one node: its GPUs talk over NVLink.
  const int domain = std::max(1, cm.topology().nvlink_domain_nodes());
  c.nodes = (s.cluster.nodes + domain - 1) / domain;
  c.ranks = l.workers;
  c.channels = std::max<int>(1, static_cast<int>(l.ring_orders.size()));
  c.nvlink = cm.gpus_on_nvlink();
  c.gpudirect = s.cluster.fabric == FabricKind::InfiniBand;
  c.compute_capability = cm.gpu().compute_capability;
  c.protocol = s.communication.protocol;
  constexpr std::uint64_t kProbe = 256ull << 20;
  const auto ring = make_ring(l, kProbe, 4);
  const double t = collective_duration(*ring, cm, nullptr);
  c.bus_bandwidth = t > 0 ? collective::bus_bandwidth_factor(collective::BusOp::AllReduce, l.workers) * kProbe / t : 0;
  return c;
}

bool enabled(const AlgorithmChoice& c, const ProtocolTuning& p) {
  if (!c.protocol.empty()) return p.name == c.protocol;  // as NCCL_PROTO: whatever the defaults
  const auto& caps = p.capabilities;
  return (!p.needs_nvlink || c.nvlink) && (!p.needs_gpudirect || c.nodes == 1 || c.gpudirect) &&
         (caps.empty() || std::find(caps.begin(), caps.end(), c.compute_capability) != caps.end());
}

using collective::BusOp;

// NCCL's bus bandwidth for a protocol: the ring's, times its share, within its limit.
double protocol_bus_bandwidth(const AlgorithmChoice& c, const ProtocolTuning& p, double share) {
  const double b = c.bus_bandwidth * share, most = p.max_bus_bandwidth(c.nodes, c.compute_capability);
  return most > 0 ? std::min(b, most) : b;
}

double tree_share(const AlgorithmChoice& c, const ProtocolTuning& p) {
  return c.nodes == 1 && p.tree_bandwidth_one_node > 0 ? p.tree_bandwidth_one_node : p.tree_bandwidth;
}

// The ring's steps: 2 (n - 1) for an allreduce, n - 1 for either half.
double ring_steps(const AlgorithmChoice& c, BusOp op) {
  return op == BusOp::AllReduce ? 2.0 * (c.ranks - 1) : c.ranks - 1.0;
}

// The share of the Simple protocol's ring bandwidth a protocol reaches: NCCL's LL reaches 1/3 instead of
// 1/4 for a one-node all-gather or reduce-scatter.
double ring_share(const AlgorithmChoice& c, const ProtocolTuning& p, BusOp op) {
  const bool gather = op != BusOp::AllReduce && c.nodes == 1 && p.ring_bandwidth_gather_one_node > 0;
  return gather ? p.ring_bandwidth_gather_one_node : p.ring_bandwidth;
}

// NCCL's ring latency for a protocol, less its per-call part: 2 (n - 1) steps, 2 x nodes of them across
// the network (at most all of them: with one GPU a node NCCL's count exceeds the steps); for either half
// n - 1 steps, nodes - 1 of them across.
double ring_steps_latency(const AlgorithmChoice& c, const ProtocolTuning& p, BusOp op) {
  const double steps = ring_steps(c, op);
  const double inter = c.nodes <= 1 ? 0 : op == BusOp::AllReduce ? std::min(steps, 2.0 * c.nodes) : c.nodes - 1.0;
  double intra = c.nvlink ? p.ring.nvlink : p.ring.pci;
  if (c.nodes > 1) intra = std::max(intra, p.network_post);
  return (steps - inter) * intra + inter * p.ring.network;
}

double ring_time(const AlgorithmChoice& c, const ProtocolTuning& p, double bytes, BusOp op) {
  double latency = p.ring.base + ring_steps_latency(c, p, op);
  if (p.name == "simple" && c.nodes > 1 && bytes >= 64.0 * c.channels * c.ranks)
    latency *= c.tuning.ring_plateau.at(c.compute_capability);
  const double algbw = protocol_bus_bandwidth(c, p, ring_share(c, p, op)) * c.ranks / ring_steps(c, op);
  return latency + bytes / algbw;
}

double tree_time(const AlgorithmChoice& c, const ProtocolTuning& p, std::uint64_t bytes) {
  const double levels = static_cast<double>(c.ranks) / c.nodes - 1, net_levels = std::floor(std::log2(c.nodes));
  const double latency =
      p.tree.base + 2 * (levels * (c.nvlink ? p.tree.nvlink : p.tree.pci) + net_levels * p.tree.network);
  double algbw = protocol_bus_bandwidth(c, p, c.tuning.tree_bandwidth * tree_share(c, p)) * 0.5;
  std::size_t log_size = 0;  // NCCL's log2i(bytes >> 6)
  for (std::uint64_t v = bytes >> 6; v > 1; v >>= 1) ++log_size;
  if (log_size < p.tree_correction.size()) algbw *= p.tree_correction[log_size];
  return latency + static_cast<double>(bytes) / algbw;
}
}  // namespace

AlgorithmPick pick_algorithm(const AlgorithmChoice& c, std::uint64_t bytes, bool ring, bool tree, BusOp op) {
  AlgorithmPick best;
  if (c.ranks < 2 || c.bus_bandwidth <= 0) return best;
  if (op != BusOp::AllReduce) ring = true, tree = false;  // the ring only (NCCL never disables it for them)
  for (const Algorithm a : {Algorithm::Ring, Algorithm::Tree}) {
    if (a == Algorithm::Tree ? !tree : !ring) continue;
    for (const auto& p : c.tuning.protocols) {
      if (!enabled(c, p)) continue;
      const double t = a == Algorithm::Tree ? tree_time(c, p, bytes) : ring_time(c, p, static_cast<double>(bytes), op);
      if (!best.protocol || t < best.time_s) best = {a, &p, t};
    }
  }
  // NVLS runs the Simple protocol only (NCCL: other protocols have no NVLS bandwidth).
  const ProtocolTuning* simple = c.tuning.protocol("simple");
  if (ring && tree && c.nvls_bandwidth > 0 && simple && (c.protocol.empty() || c.protocol == "simple")) {
    const double hops = c.nvls_tree_latency > 0 ? 2.0 * (c.nodes - 1) * c.nvls_tree_latency : 0;
    const double t = c.nvls_latency + hops + static_cast<double>(bytes) / c.nvls_bandwidth;
    if (!best.protocol || t < best.time_s)
      best = {c.nvls_tree_latency > 0 ? Algorithm::NvlsTree : Algorithm::Nvls, simple, t};
  }
  return best;
}

collective::Protocol protocol_cost(const AlgorithmChoice& c, const AlgorithmPick& pick, BusOp op) {
  collective::Protocol out;
  if (!pick.protocol) return out;
  const ProtocolTuning& p = *pick.protocol;
  out.name = p.name;
  if (pick.algorithm == Algorithm::Nvls || pick.algorithm == Algorithm::NvlsTree) {
    out.call_s = c.nvls_latency;  // NVLSTree's network hops are the step model's
  } else if (pick.algorithm == Algorithm::Tree) {
    out.call_s = p.tree.base;
    const double simple = c.tuning.tree_bandwidth * c.bus_bandwidth;
    out.bandwidth = protocol_bus_bandwidth(c, p, c.tuning.tree_bandwidth * tree_share(c, p)) / simple;
  } else {
    out.call_s = p.ring.base;
    out.step_floor_s = ring_steps_latency(c, p, op) / ring_steps(c, op);
    out.bandwidth = protocol_bus_bandwidth(c, p, ring_share(c, p, op)) / c.bus_bandwidth;
  }
  return out;
}

namespace {
BufferCollectiveLayout make_layout(const Scenario& s, collective::Space space, CommModel& costs, bool multicast) {
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
      std::nullopt,    0};
  // The library's tuning model picks each message's protocol (and, for auto, its algorithm) by the rings'
  // bus bandwidth, so the tree strategy searches its rings too.
  const bool picks = costs.library().tuning && (st == Strategy::Ring || st == Strategy::Tree || st == Strategy::Auto);
  // A tree's channels come in pairs on one searched ring each.
  const int rings = st == Strategy::Tree ? (channels + 1) / 2 : channels;
  if (st == Strategy::Ring || picks)
    l.ring_orders = device_order
                        ? std::vector<std::vector<int>>(static_cast<std::size_t>(rings), index_order(costs.workers()))
                        : search.ring_orders(rings);
  if (st == Strategy::Tree)
    l.tree_chains = tree_chains(picks ? l.ring_orders : search.ring_orders(rings), s.cluster.gpus_per_node, channels);
  if (st == Strategy::Auto)
    l.tree_chains = tree_chains(l.ring_orders, s.cluster.gpus_per_node, std::min(kMaxChannels, 2 * channels));
  if (picks) l.choice = algorithm_choice(s, l, costs);
  if (costs.library().nvls_channels > 0) l.nvls_channels = static_cast<int>(costs.library().nvls_channels);
  if (st == Strategy::Auto && multicast && costs.has_switch_member()) {
    const AlgorithmTuning& tuning = *costs.library().tuning;
    const bool tree = costs.switch_members() > 1;  // a switch per node: NVLSTree
    l.choice->nvls_latency = tuning.nvls_latency;
    l.choice->nvls_tree_latency = tree ? tuning.nvls_tree_latency : 0;
    constexpr std::uint64_t kProbe = 256ull << 20;
    const auto probe = tree ? make_nvls_tree(s, kProbe, 4, l.nvls_channels) : make_nvls(l.workers, kProbe, 4);
    const double t = collective_duration(*probe, costs, nullptr);
    l.choice->nvls_bandwidth = t > 0 ? kProbe / t : 0;
  }
  if ((st == Strategy::Nvls || st == Strategy::NvlsTree) && costs.library().tuning)
    l.nvls_latency = costs.library().tuning->nvls_latency;
  return l;
}

struct LayoutStore {
  int open = 0;  // SharedLayouts alive
  std::map<std::string, BufferCollectiveLayout> layouts;
};
LayoutStore& layout_store() {
  static LayoutStore store;
  return store;
}

// What a layout depends on besides the catalog's figures: the cluster, the library, the strategy, the data.
std::string layout_key(const Scenario& s, collective::Space space, bool multicast) {
  const ClusterConfig& c = s.cluster;
  const CommunicationConfig& m = s.communication;
  std::ostringstream k;
  k << c.sku << ' ' << c.nodes << ' ' << c.gpus_per_node << ' ' << to_string(c.fabric) << ' '
    << to_string(c.fabric_topology) << ' ' << c.nodes_per_leaf << ' ' << c.oversubscription << ' '
    << to_string(m.strategy) << ' ' << m.channels << ' ' << m.protocol << ' ' << to_string(m.library) << ' '
    << m.library_version << ' ' << m.parameter_servers << ' ' << to_string(m.ps_placement) << ' '
    << static_cast<int>(m.ps_transport) << ' ' << s.model.precision << ' ' << m.gradient_precision << ' '
    << static_cast<int>(space) << ' ' << multicast;
  return k.str();
}
}  // namespace

BufferCollectiveLayout buffer_collective_layout(const Scenario& s, collective::Space space, CommModel& costs,
                                                bool multicast) {
  LayoutStore& store = layout_store();
  if (store.open == 0) return make_layout(s, space, costs, multicast);
  const std::string key = layout_key(s, space, multicast);
  auto it = store.layouts.find(key);
  if (it == store.layouts.end()) it = store.layouts.emplace(key, make_layout(s, space, costs, multicast)).first;
  return it->second;
}

SharedLayouts::SharedLayouts() { ++layout_store().open; }
SharedLayouts::~SharedLayouts() {
  if (--layout_store().open == 0) layout_store().layouts.clear();
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

std::unique_ptr<collective::Collective> make_nvls_candidate(const Scenario& s, const BufferCollectiveLayout& layout,
                                                            std::uint64_t bytes, int element_bytes) {
  if (!layout.choice || layout.choice->nvls_bandwidth <= 0) return nullptr;
  return layout.choice->nvls_tree_latency > 0 ? make_nvls_tree(s, bytes, element_bytes, layout.nvls_channels)
                                              : make_nvls(layout.workers, bytes, element_bytes);
}

namespace {
// Ring, tree or auto: the algorithm the strategy names or NCCL's model picks, with the protocol it picks.
std::unique_ptr<collective::Collective> make_picked(const Scenario& s, const BufferCollectiveLayout& layout,
                                                    std::uint64_t bytes, int element_bytes) {
  const Strategy st = s.communication.strategy;
  const int channels = s.communication.channels;
  AlgorithmPick pick{st == Strategy::Tree ? Algorithm::Tree : Algorithm::Ring, nullptr, 0};
  if (layout.choice)
    if (auto p = pick_algorithm(*layout.choice, bytes, st != Strategy::Tree, st != Strategy::Ring); p.protocol)
      pick = p;
  const bool nvls = pick.algorithm == Algorithm::Nvls || pick.algorithm == Algorithm::NvlsTree;
  auto c = nvls                                ? make_nvls_candidate(s, layout, bytes, element_bytes)
           : pick.algorithm == Algorithm::Ring ? make_ring(layout, bytes, element_bytes)
           : st == Strategy::Auto              ? make_tree(s, layout, bytes, element_bytes, 2 * channels)
                                               : make_tree(s, layout, bytes, element_bytes, channels);
  if (layout.choice) c->protocol = protocol_cost(*layout.choice, pick);
  return c;
}
}  // namespace

std::unique_ptr<collective::Collective> make_buffer_collective(const Scenario& s, const BufferCollectiveLayout& layout,
                                                               std::uint64_t bytes, int element_bytes,
                                                               const BufferShards& shards) {
  const auto& c = s.communication;
  switch (c.strategy) {
    case Strategy::Ring:
    case Strategy::Tree:
    case Strategy::Auto:
      return make_picked(s, layout, bytes, element_bytes);
    case Strategy::Hierarchical:
      return collective::make_hierarchical_allreduce(s.cluster.nodes, s.cluster.gpus_per_node, bytes, element_bytes,
                                                     layout.space, layout.local_order, c.cross_node);
    case Strategy::HalvingDoubling:
      return collective::make_halving_doubling_allreduce(layout.workers, bytes, element_bytes, layout.space);
    case Strategy::Nvls:
    case Strategy::NvlsTree: {
      auto nvls = c.strategy == Strategy::Nvls ? make_nvls(layout.workers, bytes, element_bytes)
                                               : make_nvls_tree(s, bytes, element_bytes, layout.nvls_channels);
      if (layout.nvls_latency > 0) nvls->protocol = {"simple", layout.nvls_latency, 0, 1};  // NCCL's NVLS call
      return nvls;
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

Scenario gather_layout_scenario(const Scenario& s) {
  Scenario out = s;
  const Strategy st = s.communication.strategy;
  if (st != Strategy::Ring && st != Strategy::Auto) out.communication.strategy = Strategy::Ring;
  return out;
}

std::unique_ptr<collective::Collective> make_gather_collective(const BufferCollectiveLayout& layout,
                                                               collective::BusOp op, std::uint64_t bytes,
                                                               int element_bytes) {
  if (op == collective::BusOp::AllReduce) throw std::logic_error("make_gather_collective: an allreduce");
  const auto orders = layout.ring_orders.empty() ? std::vector<std::vector<int>>(1) : layout.ring_orders;
  auto c = op == collective::BusOp::AllGather
               ? collective::make_ring_allgather(layout.workers, bytes, element_bytes, layout.space, orders)
               : collective::make_ring_reduce_scatter(layout.workers, bytes, element_bytes, layout.space, orders);
  if (layout.choice)
    if (const auto pick = pick_algorithm(*layout.choice, bytes, true, false, op); pick.protocol)
      c->protocol = protocol_cost(*layout.choice, pick, op);
  return c;
}

namespace {
// A shard group's rings: each of the layout's rings through every GPU, restricted to the first group's GPUs
// (a ring's cyclic order kept; the groups alike, as the rings are alike in every node); without rings, the
// group's nodes in order, each along the ring inside a node.
std::vector<std::vector<int>> group_rings(const BufferCollectiveLayout& layout, int group, int local) {
  std::vector<std::vector<int>> rings;
  for (const auto& ring : layout.ring_orders) {
    std::vector<int> r;
    for (int m : ring)
      if (m < group) r.push_back(m);
    rings.push_back(std::move(r));
  }
  if (!rings.empty()) return rings;
  std::vector<int> order = layout.local_order;
  if (static_cast<int>(order.size()) != local) order.assign(local, 0), std::iota(order.begin(), order.end(), 0);
  std::vector<int> r;
  for (int n = 0; n < group / local; ++n)
    for (int j : order) r.push_back(n * local + j);
  return {r};
}
}  // namespace

std::unique_ptr<collective::Collective> make_sharded_collective(const Scenario& s, const BufferCollectiveLayout& layout,
                                                                collective::BusOp op, std::uint64_t bytes,
                                                                int element_bytes) {
  using collective::BusOp;
  const int gpus = s.cluster.total_gpus(), group = state_shards(s);
  if (s.communication.sharding != Sharding::HybridShard || group == gpus)
    return make_gather_collective(layout, op, bytes, element_bytes);
  const int groups = gpus / group;
  const auto rings = group_rings(layout, group, s.cluster.gpus_per_node);
  std::vector<std::vector<int>> in_group(groups), across(group);
  for (int g = 0; g < groups; ++g)
    for (int j = 0; j < group; ++j) {
      in_group[g].push_back(g * group + j);
      across[j].push_back(g * group + j);  // local GPU j of every group
    }
  std::shared_ptr<const collective::Collective> inner =
      op == BusOp::AllGather ? collective::make_ring_allgather(group, bytes, element_bytes, layout.space, rings)
                             : collective::make_ring_reduce_scatter(group, bytes, element_bytes, layout.space, rings);
  auto groups_at_once = collective::make_grouped(inner, in_group, std::vector<std::uint64_t>(groups, 0),
                                                 op == BusOp::AllGather ? "hybrid_allgather" : "group_reduce_scatter");
  if (op == BusOp::AllGather) return groups_at_once;
  // Then the GPUs that keep the same chunks allreduce them across the groups: local GPU j keeps, of each ring's
  // share of the buffer, the chunk its position there owns; those pieces travel as one buffer.
  const collective::Chunking split(bytes, static_cast<int>(rings.size()), element_bytes);
  std::vector<std::vector<collective::Piece>> pieces(group);
  std::vector<std::shared_ptr<const collective::Collective>> shards;
  for (int j = 0; j < group; ++j) {
    std::uint64_t kept = 0;
    for (std::size_t c = 0; c < rings.size(); ++c) {
      const collective::Chunking chunks(split.size(static_cast<int>(c)), group, element_bytes);
      const auto& r = rings[c];  // empty: index order
      const auto pos = r.empty() ? j : std::find(r.begin(), r.end(), j) - r.begin();
      const int own = collective::ring_chunk_owned(static_cast<int>(pos), group);
      pieces[j].push_back({split.offset(static_cast<int>(c)) + chunks.offset(own), chunks.size(own)});
      kept += chunks.size(own);
    }
    shards.push_back(
        collective::make_ring_allreduce(groups, kept, element_bytes, layout.space, std::vector<std::vector<int>>(1)));
  }
  return collective::make_sequence(
      std::move(groups_at_once),
      collective::make_grouped(std::move(shards), across, std::move(pieces), "cross_group_allreduce"),
      "hybrid_reduce_scatter");
}

}  // namespace ringsim
